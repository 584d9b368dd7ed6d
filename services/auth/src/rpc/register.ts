import type { RpcHandler } from "@fundraise/bus";
import type { AuthRpc } from "@fundraise/protocol";
import type { AuthService } from "../sign-in/auth.service.ts";

/** POST /Authentication/Register: data is the new user's id (the gateway answers 201). */
export const register =
  (auth: AuthService): RpcHandler<typeof AuthRpc.register> =>
  async (request, ctx) =>
    auth.register(request.register, request.origin, ctx);

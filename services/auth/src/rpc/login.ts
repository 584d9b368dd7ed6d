import type { RpcHandler } from "@fundraise/bus";
import type { AuthRpc } from "@fundraise/protocol";
import type { AuthService } from "../sign-in/auth.service.ts";

/** POST /Authentication/Login: data is the access token. */
export const login =
  (auth: AuthService): RpcHandler<typeof AuthRpc.login> =>
  async (request, ctx) =>
    auth.login(request.login, request.origin, ctx);

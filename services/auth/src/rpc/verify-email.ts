import type { RpcHandler } from "@fundraise/bus";
import type { AuthRpc } from "@fundraise/protocol";
import type { AuthService } from "../sign-in/auth.service.ts";

/** GET /Authentication/verify-email: data is the message the gateway shows (page or envelope). */
export const verifyEmail =
  (auth: AuthService): RpcHandler<typeof AuthRpc.verifyEmail> =>
  async (request, ctx) =>
    auth.verifyEmail(request.email, request.token, ctx);

import type { RpcHandler } from "@fundraise/bus";
import type { AuthRpc } from "@fundraise/protocol";
import type { AuthService } from "../sign-in/auth.service.ts";

/** GET /Authentication/GetNonce/{address}: same answer shape whether the address is registered or not. */
export const issueNonce =
  (auth: AuthService): RpcHandler<typeof AuthRpc.nonce> =>
  async (request) =>
    auth.issueNonce(request.address, request.origin);

import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** A followed verification link (auth service only); idempotent. */
export const markVerified =
  (users: UserService): RpcHandler<typeof UsersRpc.markVerified> =>
  async ({ userId, mailAddress }) =>
    users.markVerified(userId, mailAddress);

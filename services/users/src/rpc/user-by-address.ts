import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The account of a wallet, or null (auth service only: sign-in). */
export const userByAddress =
  (users: UserService): RpcHandler<typeof UsersRpc.byAddress> =>
  async ({ address }) =>
    users.byAddress(address);

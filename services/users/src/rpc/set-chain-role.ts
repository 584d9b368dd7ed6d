import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The role the chain gives an address, read by the auth service at sign-in. */
export const setChainRole =
  (users: UserService): RpcHandler<typeof UsersRpc.setChainRole> =>
  async ({ address, role }, ctx) =>
    users.setChainRole(address, role, ctx);

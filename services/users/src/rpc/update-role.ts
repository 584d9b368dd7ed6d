import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** An admin sets the role of the user with an address; recorded in the role history. */
export const updateRole =
  (users: UserService): RpcHandler<typeof UsersRpc.updateRole> =>
  async ({ caller, address, role }, ctx) =>
    users.updateRole(caller, address, role, ctx);

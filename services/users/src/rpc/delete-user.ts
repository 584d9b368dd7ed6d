import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** An admin deletes another user by id. */
export const deleteUser =
  (users: UserService): RpcHandler<typeof UsersRpc.delete> =>
  async ({ caller, id }, ctx) => {
    await users.deleteById(caller, id, ctx);
    return null;
  };

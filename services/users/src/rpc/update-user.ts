import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** Name, surname, username and e-mail of the caller; null or absent fields stay as they are. */
export const updateUser =
  (users: UserService): RpcHandler<typeof UsersRpc.update> =>
  async ({ caller, user }, ctx) =>
    users.update(caller, user, ctx);

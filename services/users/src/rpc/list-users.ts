import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** Every user, ordered by id (admin). */
export const listUsers =
  (users: UserService): RpcHandler<typeof UsersRpc.list> =>
  async ({ caller }) =>
    users.list(caller);

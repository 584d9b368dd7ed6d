import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

export const countUsers =
  (users: UserService): RpcHandler<typeof UsersRpc.count> =>
  async () =>
    users.countVerified();

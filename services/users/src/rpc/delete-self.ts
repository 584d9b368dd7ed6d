import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The caller deletes its own account (refused while it owns a project or is the last Admin). */
export const deleteSelf =
  (users: UserService): RpcHandler<typeof UsersRpc.deleteSelf> =>
  async ({ caller }, ctx) => {
    await users.deleteSelf(caller, ctx);
    return null;
  };

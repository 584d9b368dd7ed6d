import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The caller's own UserDTO with its pending invitations (null when the projects service cannot tell). */
export const getUser =
  (users: UserService): RpcHandler<typeof UsersRpc.get> =>
  async ({ caller }, ctx) =>
    users.get(caller, ctx);

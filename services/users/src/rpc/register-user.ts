import type { RpcHandler } from "@fundraise/bus";
import type { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** Sign-up after the auth service checked the signature (auth service only). */
export const registerUser =
  (users: UserService): RpcHandler<typeof UsersRpc.register> =>
  async (newUser, ctx) =>
    users.register(newUser, ctx);

import type { Bus } from "@fundraise/bus";
import { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";
import { countUsers } from "./count-users.ts";

/** The users service's RPC surface: descriptor → handler. */
export async function serveUsersRpc(bus: Bus, users: UserService): Promise<void> {
  await bus.serve(UsersRpc.count, countUsers(users));
}

import type { Bus } from "@fundraise/bus";
import { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";
import { countUsers } from "./count-users.ts";
import { deleteSelf } from "./delete-self.ts";
import { deleteUser } from "./delete-user.ts";
import { getUser } from "./get-user.ts";
import { listUsers } from "./list-users.ts";
import { markVerified } from "./mark-verified.ts";
import { registerUser } from "./register-user.ts";
import { setChainRole } from "./set-chain-role.ts";
import { updateRole } from "./update-role.ts";
import { updateUser } from "./update-user.ts";
import { userByAddress } from "./user-by-address.ts";

/** The users service's RPC surface: descriptor → handler. */
export async function serveUsersRpc(bus: Bus, users: UserService): Promise<void> {
  await bus.serve(UsersRpc.count, countUsers(users));
  await bus.serve(UsersRpc.get, getUser(users));
  await bus.serve(UsersRpc.update, updateUser(users));
  await bus.serve(UsersRpc.deleteSelf, deleteSelf(users));
  await bus.serve(UsersRpc.delete, deleteUser(users));
  await bus.serve(UsersRpc.list, listUsers(users));
  await bus.serve(UsersRpc.updateRole, updateRole(users));
  await bus.serve(UsersRpc.register, registerUser(users));
  await bus.serve(UsersRpc.byAddress, userByAddress(users));
  await bus.serve(UsersRpc.markVerified, markVerified(users));
  await bus.serve(UsersRpc.setChainRole, setChainRole(users));
}

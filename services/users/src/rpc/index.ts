import type { Bus } from "@fundraise/bus";
import { UsersRpc } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The users service's RPC surface: each descriptor straight to its use case (rules in users/). */
export async function serveUsersRpc(bus: Bus, users: UserService): Promise<void> {
  await bus.serve(UsersRpc.count, () => users.countVerified());
  await bus.serve(UsersRpc.get, ({ caller }, ctx) => users.get(caller, ctx));
  await bus.serve(UsersRpc.update, ({ caller, user }, ctx) => users.update(caller, user, ctx));
  await bus.serve(UsersRpc.deleteSelf, async ({ caller }, ctx) => {
    await users.deleteSelf(caller, ctx);
    return null;
  });
  await bus.serve(UsersRpc.delete, async ({ caller, id }, ctx) => {
    await users.deleteById(caller, id, ctx);
    return null;
  });
  await bus.serve(UsersRpc.list, ({ caller }) => users.list(caller));
  await bus.serve(UsersRpc.updateRole, ({ caller, address, role }, ctx) =>
    users.updateRole(caller, address, role, ctx),
  );
  // Asked by the auth service only (sign-up, verification, sign-in).
  await bus.serve(UsersRpc.register, (newUser, ctx) => users.register(newUser, ctx));
  await bus.serve(UsersRpc.byAddress, ({ address }) => users.byAddress(address));
  await bus.serve(UsersRpc.markVerified, ({ userId, mailAddress }, ctx) =>
    users.markVerified(userId, mailAddress, ctx),
  );
  await bus.serve(UsersRpc.setChainRole, ({ address, role }, ctx) => users.setChainRole(address, role, ctx));
  // Asked by the projects service only (memberships).
  await bus.serve(UsersRpc.byUsername, ({ username }) => users.byUsername(username));
  await bus.serve(UsersRpc.byIds, ({ ids }) => users.byIds(ids));
}

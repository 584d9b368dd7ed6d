import { testMessageContext } from "@fundraise/bus/testing";
import {
  type Caller,
  type ChainEvents,
  type PayloadOf,
  RPC_ROLES,
  type SessionChange,
  USER_ROLES,
  type UserRole,
  UsersRpc,
} from "@fundraise/protocol";
import { Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import { createMemoryUsers } from "../test/memory-users.ts";
import type { User } from "./user.entity.ts";
import { UserErrors } from "./user.errors.ts";
import { createUserService } from "./user.service.ts";

// The users service's rules on an in-memory repository (test/memory-users.ts): no Postgres, no bus. The
// SQL, the locks under concurrency and the wiring are the integration suites' (rpc/*.int.test.ts).

const ctx = () => testMessageContext();
const callerOf = (user: User): Caller => ({
  userId: user.id,
  username: user.username,
  address: user.address,
  role: user.role as UserRole,
});

/** The service on memory, with its neighbours recording what they are asked. */
function setup() {
  const users = createMemoryUsers();
  const calls = { fenced: [] as number[], unfenced: [] as number[], removedRows: [] as number[] };
  const sessions: SessionChange[] = [];
  /** Users the projects service refuses to fence (they own a project). */
  const owners = new Set<number>();
  const chain = { role: "Base" as UserRole, head: null as number | null };
  let clock = new Date("2026-12-01T12:00:00Z");
  const service = createUserService({
    users,
    projects: {
      async fence(userId) {
        if (owners.has(userId)) throw UserErrors.ownsProject();
        calls.fenced.push(userId);
      },
      unfence: async (userId) => void calls.unfenced.push(userId),
      removeRows: async (userId) => void calls.removedRows.push(userId),
    },
    sessions: async (change) => void sessions.push(change),
    chain: { role: async () => chain.role, head: async () => chain.head },
    now: () => clock,
  });
  const eventsNamed = (name: string) => users.events.filter((e) => e.name === name).map((e) => e.payload);
  const tick = (seconds: number) => {
    clock = new Date(clock.getTime() + seconds * 1000);
  };
  return { users, service, calls, sessions, owners, chain, eventsNamed, tick, now: () => clock };
}

const signUp = (address: string, overrides: Partial<Record<string, string>> = {}) => ({
  address,
  name: "Ada",
  surname: "Lovelace",
  username: `ada_${address.slice(2, 8)}`,
  mailAddress: `ada.${address.slice(2, 8)}@example.org`,
  pendingUntil: new Date("2026-12-02T12:00:00Z").toISOString(),
  proof: "nonce" as const,
  ...overrides,
});

describe("deletion", () => {
  it("fences the user in the projects service, deletes, announces it and puts it in force", async () => {
    const { users, service, calls, sessions, eventsNamed } = setup();
    const user = users.seed();
    await service.deleteSelf(callerOf(user), ctx());
    expect(users.users.has(user.id)).toBe(false);
    expect(calls.fenced).toEqual([user.id]);
    expect(eventsNamed("users.user.deleted")).toEqual([
      { userId: user.id, address: user.address, version: 2 },
    ]);
    expect(sessions).toEqual([
      { userId: user.id, address: user.address, version: 2, role: null, revoke: true, deleted: true },
    ]);
    expect(calls.removedRows).toEqual([user.id]);
  });

  it("an Owner of a project is refused by the fence: nothing is deleted or announced", async () => {
    const { users, service, owners, sessions } = setup();
    const user = users.seed();
    owners.add(user.id);
    await expect(service.deleteSelf(callerOf(user), ctx())).rejects.toMatchObject({
      code: "USER_OWNS_PROJECT",
    });
    expect(users.users.has(user.id)).toBe(true);
    expect(users.events).toEqual([]);
    expect(sessions).toEqual([]);
  });

  it("a deletion that does not commit lifts its fence again", async () => {
    const { users, service, calls } = setup();
    const user = users.seed();
    users.failNextCommit(new Error("commit failed"));
    await expect(service.deleteSelf(callerOf(user), ctx())).rejects.toThrow("commit failed");
    expect(calls.unfenced).toEqual([user.id]);
    expect(users.users.has(user.id)).toBe(true);
  });

  it("deleteById is an Admin's, never of the admin itself; the last Admin stays", async () => {
    const { users, service } = setup();
    const admin = users.seed({ role: "Admin" });
    const other = users.seed();
    await expect(service.deleteById(callerOf(other), admin.id, ctx())).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    await expect(service.deleteById(callerOf(admin), admin.id, ctx())).rejects.toMatchObject({
      code: "USER_SELF_ACTION",
    });
    await expect(service.deleteSelf(callerOf(admin), ctx())).rejects.toMatchObject({
      code: "USER_LAST_ADMIN",
    });
    // With a second Admin, one may delete the other.
    const second = users.seed({ role: "Admin" });
    await service.deleteById(callerOf(admin), second.id, ctx());
    expect(users.users.has(second.id)).toBe(false);
    await expect(service.deleteById(callerOf(admin), second.id, ctx())).rejects.toMatchObject({
      code: "USER_NOT_FOUND",
    });
  });
});

describe("RPCs only some roles may call (protocol RPC_ROLES, paired with the gateway's routes)", () => {
  it("refuse every role the list does not name (403), before anything else; admit the others", async () => {
    const { users, service } = setup();
    const nobody = new Wallet(`0x${"7".repeat(64)}`).address;
    const calls: Record<string, (caller: Caller) => Promise<unknown>> = {
      [UsersRpc.delete.name]: (caller) => service.deleteById(caller, 999_999, ctx()),
      [UsersRpc.list.name]: (caller) => service.list(caller),
      [UsersRpc.updateRole.name]: (caller) => service.updateRole(caller, nobody, "Base", ctx()),
    };
    const reserved = Object.keys(RPC_ROLES).filter((name) => name.startsWith("users."));
    expect(Object.keys(calls).sort()).toEqual(reserved.sort());
    for (const [rpc, call] of Object.entries(calls)) {
      for (const role of USER_ROLES) {
        const refused = await call(callerOf(users.seed({ role }))).then(
          () => false,
          (error: { code?: string }) => error.code === "ROLE_FORBIDDEN",
        );
        expect(refused, `${rpc} by ${role}`).toBe(!RPC_ROLES[rpc]?.includes(role));
      }
    }
  });
});

describe("role changes", () => {
  it("an Admin's change: the role, a new account version, the history, the event, revocation in force", async () => {
    const { users, service, sessions, eventsNamed, chain } = setup();
    const admin = users.seed({ role: "Admin" });
    const user = users.seed();
    chain.head = 40;
    const dto = await service.updateRole(
      callerOf(admin),
      user.address.toUpperCase().replace("0X", "0x"),
      "viewer",
      ctx(),
    );
    expect(dto).toMatchObject({ id: user.id, role: "Viewer" });
    expect(users.users.get(user.id)).toMatchObject({ role: "Viewer", accountVersion: 2, adminRoleBlock: 40 });
    expect(users.roleChanges).toEqual([
      {
        userId: user.id,
        previousRole: "Base",
        newRole: "Viewer",
        changedBy: String(admin.id),
        sourceTx: null,
      },
    ]);
    expect(eventsNamed("users.user.role-changed")).toEqual([
      expect.objectContaining({ userId: user.id, role: "Viewer", previousRole: "Base", version: 2 }),
    ]);
    expect(sessions.at(-1)).toMatchObject({ userId: user.id, version: 2, role: "Viewer", revoke: true });
    // The same role again changes nothing and revokes nothing; the session is confirmed.
    await service.updateRole(callerOf(admin), user.address, "Viewer", ctx());
    expect(eventsNamed("users.user.role-changed")).toHaveLength(1);
    expect(sessions.at(-1)).toMatchObject({ version: 2, revoke: false });
  });

  it("only an Admin still holding the role changes roles, never its own", async () => {
    const { users, service } = setup();
    const admin = users.seed({ role: "Admin" });
    const user = users.seed();
    await expect(service.updateRole(callerOf(user), admin.address, "Base", ctx())).rejects.toMatchObject({
      code: "ROLE_FORBIDDEN",
    });
    await expect(service.updateRole(callerOf(admin), admin.address, "Base", ctx())).rejects.toMatchObject({
      code: "USER_SELF_ACTION",
    });
    await expect(service.updateRole(callerOf(admin), user.address, "Owner", ctx())).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    // Demoted since its token was issued: its Admin claim no longer counts.
    const demoted = users.seed({ role: "Base" });
    await expect(
      service.updateRole({ ...callerOf(demoted), role: "Admin" }, user.address, "Viewer", ctx()),
    ).rejects.toMatchObject({ code: "ROLE_FORBIDDEN" });
  });

  it("an admin's Blacklist outlives the account: the address signs up again Blacklisted", async () => {
    const { users, service } = setup();
    const admin = users.seed({ role: "Admin" });
    const address = Wallet.createRandom().address;
    const user = users.seed({ address });
    await service.updateRole(callerOf(admin), address, "Blacklist", ctx());
    await service.deleteSelf({ ...callerOf(user), role: "Blacklist" }, ctx());
    const { userId } = await service.register(signUp(address), ctx());
    expect(users.users.get(userId)).toMatchObject({ role: "Blacklist" });
  });

  it("chain facts: applied once, in chain order; an admin's later change stands against an older fact", async () => {
    const { users, service, tick, now } = setup();
    const admin = users.seed({ role: "Admin" });
    const user = users.seed();
    const fact = (
      block: number,
      role: UserRole,
      at = now(),
    ): PayloadOf<typeof ChainEvents.userStatusChanged> => ({
      address: user.address,
      role,
      origin: {
        chainId: 31337,
        txHash: `0x${block.toString(16).padStart(64, "0")}`,
        logIndex: 0,
        blockNumber: block,
        blockHash: `0x${"ab".repeat(32)}`,
        blockTimestamp: Math.floor(at.getTime() / 1000),
      },
    });
    await service.applyChainStatus(fact(10, "Whitelist"), ctx());
    expect(users.users.get(user.id)).toMatchObject({
      role: "Whitelist",
      chainRole: "Whitelist",
      chainRoleBlock: 10,
    });
    // The same fact again, and an older one: nothing changes.
    await service.applyChainStatus(fact(10, "Whitelist"), ctx());
    await service.applyChainStatus(fact(9, "Viewer"), ctx());
    expect(users.users.get(user.id)).toMatchObject({ role: "Whitelist", accountVersion: 2 });
    // An admin demotes; a fact from a block dated before that change is recorded, the admin's role stands.
    const before = now();
    tick(5);
    await service.updateRole(callerOf(admin), user.address, "Base", ctx());
    await service.applyChainStatus(fact(11, "Viewer", before), ctx());
    expect(users.users.get(user.id)).toMatchObject({ role: "Base", chainRole: "Viewer", chainRoleBlock: 11 });
    // A later chain change wins.
    tick(5);
    await service.applyChainStatus(fact(12, "Whitelist", now()), ctx());
    expect(users.users.get(user.id)).toMatchObject({ role: "Whitelist" });
  });
});

describe("profile", () => {
  it("Blacklist is read-only; a new e-mail makes the user unverified and is announced", async () => {
    const { users, service, eventsNamed } = setup();
    const user = users.seed();
    await expect(
      service.update({ ...callerOf(user), role: "Blacklist" }, { name: "Eve" }, ctx()),
    ).rejects.toMatchObject({ code: "ROLE_FORBIDDEN" });
    const dto = await service.update(callerOf(user), { mailAddress: "  New@Example.org " }, ctx());
    expect(dto.mailAddress).toBe("New@Example.org");
    expect(users.users.get(user.id)).toMatchObject({ isVerified: false, pendingUntil: null });
    expect(eventsNamed("users.user.email-changed")).toEqual([
      { userId: user.id, address: user.address, mailAddress: "New@Example.org" },
    ]);
  });

  it("a username another user holds is 409; one an expired sign-up holds is freed", async () => {
    const { users, service, now, eventsNamed } = setup();
    const user = users.seed();
    const holder = users.seed({ username: "Taken" });
    await expect(service.update(callerOf(user), { username: "taken" }, ctx())).rejects.toMatchObject({
      code: "USER_USERNAME_TAKEN",
    });
    const stale = users.seed({
      username: "stale",
      isVerified: false,
      pendingUntil: new Date(now().getTime() - 1),
    });
    await service.update(callerOf(user), { username: "STALE" }, ctx());
    expect(users.users.has(stale.id)).toBe(false);
    expect(users.users.has(holder.id)).toBe(true);
    expect(eventsNamed("users.user.deleted")).toEqual([expect.objectContaining({ userId: stale.id })]);
  });
});

describe("sign-up", () => {
  it("the same pending sign-up again is re-sent, never changed; other data is 409", async () => {
    const { users, service } = setup();
    const address = Wallet.createRandom().address;
    const first = await service.register(signUp(address), ctx());
    expect(first).toMatchObject({ replaced: false, resent: false });
    const again = await service.register(
      signUp(address, { username: signUp(address).username.toUpperCase() }),
      ctx(),
    );
    expect(again).toEqual({ userId: first.userId, replaced: false, resent: true });
    await expect(service.register(signUp(address, { name: "Eve" }), ctx())).rejects.toMatchObject({
      code: "USER_ADDRESS_TAKEN",
    });
    expect(users.users.get(first.userId)).toMatchObject({ name: "Ada", isVerified: false });
  });

  it("a nonce-proven sign-up replaces a pending legacy one; an expired one is replaced by anyone", async () => {
    const { users, service, tick } = setup();
    const address = Wallet.createRandom().address;
    const legacy = await service.register(signUp(address, { proof: "legacy" } as never), ctx());
    const proven = await service.register(signUp(address, { name: "Eve" }), ctx());
    expect(proven).toMatchObject({ replaced: true, resent: false });
    expect(users.users.has(legacy.userId)).toBe(false);
    // A pending nonce-proven sign-up is replaced by nobody, until it expires.
    await expect(service.register(signUp(address, { name: "Mallory" }), ctx())).rejects.toMatchObject({
      code: "USER_ADDRESS_TAKEN",
    });
    tick(2 * 86_400);
    const later = await service.register(signUp(address, { name: "Mallory" }), ctx());
    expect(later).toMatchObject({ replaced: true });
    expect(users.users.get(later.userId)).toMatchObject({ name: "Mallory" });
  });

  it("a verified account's address is taken; the link verifies only the e-mail it was sent to", async () => {
    const { users, service } = setup();
    const address = Wallet.createRandom().address;
    const { userId } = await service.register(signUp(address), ctx());
    await expect(service.markVerified(userId, "other@example.org", ctx())).rejects.toMatchObject({
      code: "VERIFICATION_TOKEN_INVALID",
    });
    const account = await service.markVerified(userId, signUp(address).mailAddress.toUpperCase(), ctx());
    expect(account).toMatchObject({ id: userId, isVerified: true });
    expect(await service.countVerified()).toBe(1);
    await expect(service.register(signUp(address), ctx())).rejects.toMatchObject({
      code: "USER_ADDRESS_TAKEN",
    });
    expect(users.users.get(userId)?.pendingUntil).toBeNull();
  });
});

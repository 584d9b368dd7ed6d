import { waitFor } from "@fundraise/bus/testing";
import { ChainEvents, type PayloadOf, UsersEvents, UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import {
  callerOf,
  chainStatusFact,
  expectAppError,
  randomAddress,
  uniqueName,
  useHarness,
} from "../test/harness.ts";

// Roles: an admin's updateRole, the auth service's setChainRole, and the chain-indexer's status facts.
const h = useHarness("roles");

async function history(userId: number) {
  const { rows } = await h.sql.query(
    `select previous_role, new_role, changed_by, source_tx from users.role_change where user_id = $1 order by id`,
    [userId],
  );
  return rows;
}

async function roleOf(userId: number): Promise<string> {
  const { rows } = await h.sql.query(`select role from users."user" where id = $1`, [userId]);
  return rows[0]!.role as string;
}

async function roleEventsFor(userId: number) {
  return (await h.outboxPayloads(UsersEvents.roleChanged)).filter((p) => p.userId === userId);
}

describe("users.user.update-role (admin)", () => {
  it("sets the role named in any case for an address in any case, records who did it, emits role-changed", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser();
    const dto = await h.client.call(UsersRpc.updateRole, {
      caller: callerOf(admin),
      address: user.address.toLowerCase(),
      role: "wHiTeLiSt",
    });
    expect(dto).toMatchObject({ id: user.id, address: user.address, role: "Whitelist", invitations: null });
    expect(await history(user.id)).toEqual([
      { previous_role: "Base", new_role: "Whitelist", changed_by: String(admin.id), source_tx: null },
    ]);
    expect(await h.receivedEvent(UsersEvents.roleChanged, { userId: user.id })).toEqual({
      userId: user.id,
      address: user.address,
      role: "Whitelist",
      previousRole: "Base",
      changedBy: String(admin.id),
      version: 2,
    });
    // The session held the change (and refuses tokens issued before it) before the change answered.
    expect(h.sessions.state(user.id)).toEqual({
      role: "Whitelist",
      version: 2,
      revokedBelow: 2,
      deleted: false,
    });
  });

  it("503 while the session cannot be told; repeating the request confirms the change once it can", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser();
    h.sessions.failing = true;
    try {
      await expectAppError(
        h.client.call(UsersRpc.updateRole, {
          caller: callerOf(admin),
          address: user.address,
          role: "Viewer",
        }),
        "unavailable",
        "SERVICE_UNAVAILABLE",
      );
    } finally {
      h.sessions.failing = false;
    }
    // Saved, and its event carries the change to the session later.
    expect(await roleOf(user.id)).toBe("Viewer");
    expect(await h.receivedEvent(UsersEvents.roleChanged, { userId: user.id })).toMatchObject({
      version: 2,
    });
    await h.client.call(UsersRpc.updateRole, {
      caller: callerOf(admin),
      address: user.address,
      role: "Viewer",
    });
    expect(h.sessions.state(user.id)).toMatchObject({ role: "Viewer", version: 2 });
  });

  it("two Admins demoting each other at once never leave the platform without an Admin (20 rounds)", async () => {
    for (let round = 0; round < 20; round++) {
      await h.sql.query(`update users."user" set role = 'Base' where role = 'Admin'`);
      const [a, b] = await Promise.all([h.seedUser({ role: "Admin" }), h.seedUser({ role: "Admin" })]);
      const results = await Promise.allSettled([
        h.client.call(UsersRpc.updateRole, { caller: callerOf(a), address: b.address, role: "Base" }),
        h.client.call(UsersRpc.updateRole, { caller: callerOf(b), address: a.address, role: "Base" }),
      ]);
      // The second, serialized behind the first on the Admin rows, finds its caller no Admin any more.
      expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
      expect((results.find((r) => r.status === "rejected") as PromiseRejectedResult).reason).toMatchObject({
        kind: "forbidden",
        code: "ROLE_FORBIDDEN",
      });
      const { rows } = await h.sql.query(`select count(*)::int as n from users."user" where role = 'Admin'`);
      expect(rows[0]?.n).toBe(1);
    }
  });

  it("one admin's many role changes at once, a user made Admin and back among them: each answers its outcome, none gives way to a deadlock (10 rounds of 40)", async () => {
    // The user before the admin: a lower id, so a statement that sees the user among the Admins locks
    // its row before the admin's (the order that deadlocked: 503 DB_UNAVAILABLE, then a queue of them).
    const user = await h.seedUser();
    const admin = await h.seedUser({ role: "Admin" });
    const roles = ["Admin", "Base", "Whitelist", "Admin", "Viewer", "Blacklist"];
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 10; round++) {
      const settled = await Promise.allSettled(
        Array.from({ length: 40 }, async (_, i) => {
          // Arrivals spread over 40 ms, as requests come: a change lands between another's statements.
          await new Promise((r) => setTimeout(r, Math.random() * 40));
          return h.client.call(UsersRpc.updateRole, {
            caller: callerOf(admin),
            address: i % 3 === 2 ? randomAddress() : user.address,
            role: roles[(round + i) % roles.length] as string,
          });
        }),
      );
      for (const [i, r] of settled.entries()) {
        const outcome =
          r.status === "fulfilled" ? "changed" : String((r.reason as { code?: unknown }).code ?? r.reason);
        const key = `${i % 3 === 2 ? "unknown address" : "the user"}: ${outcome}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(outcomes)).toEqual({
      "the user: changed": 270,
      "unknown address: USER_NOT_FOUND": 130,
    });
  });

  it("an admin's Blacklist outlives the account: the same wallet signing up again starts Blacklisted", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser();
    await h.client.call(UsersRpc.updateRole, {
      caller: callerOf(admin),
      address: user.address,
      role: "Blacklist",
    });
    await h.client.call(UsersRpc.deleteSelf, { caller: callerOf(user, "Blacklist") });
    const signUp = (address: string) =>
      h.client.call(UsersRpc.register, {
        address,
        name: "Ada",
        surname: "Lovelace",
        username: uniqueName(),
        mailAddress: `${uniqueName()}@example.org`,
        pendingUntil: new Date(Date.now() + 86_400_000).toISOString(),
        proof: "nonce",
      });
    const again = await signUp(user.address.toLowerCase());
    expect(await roleOf(again.userId)).toBe("Blacklist");
    // Recorded with who decided it, and dated as the admin's change: a first chain read only records.
    expect(await history(again.userId)).toEqual([
      { previous_role: "Base", new_role: "Blacklist", changed_by: String(admin.id), source_tx: null },
    ]);
    const { rows: mail } = await h.sql.query(`select mail_address from users."user" where id = $1`, [
      again.userId,
    ]);
    await h.client.call(UsersRpc.markVerified, { userId: again.userId, mailAddress: mail[0]?.mail_address });
    expect(await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Base" })).toMatchObject(
      {
        role: "Blacklist",
      },
    );

    // An admin lifting it lifts it for good: the next account of the address starts Base.
    await h.client.call(UsersRpc.updateRole, {
      caller: callerOf(admin),
      address: user.address,
      role: "Base",
    });
    await h.client.call(UsersRpc.deleteSelf, {
      caller: { userId: again.userId, username: "x", address: user.address, role: "Base" },
    });
    const third = await signUp(user.address);
    expect(await roleOf(third.userId)).toBe("Base");
  });

  it("every role change raises the account version the session and tokens carry", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser();
    for (const role of ["Viewer", "Blacklist", "Base"]) {
      await h.client.call(UsersRpc.updateRole, { caller: callerOf(admin), address: user.address, role });
    }
    expect(await h.client.call(UsersRpc.byAddress, { address: user.address })).toMatchObject({ version: 4 });
    expect(h.sessions.state(user.id)).toEqual({ role: "Base", version: 4, revokedBelow: 4, deleted: false });
  });

  it("the same role again changes nothing: no history row, no event", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser({ role: "Viewer" });
    const dto = await h.client.call(UsersRpc.updateRole, {
      caller: callerOf(admin),
      address: user.address,
      role: "viewer",
    });
    expect(dto.role).toBe("Viewer");
    expect(await history(user.id)).toEqual([]);
    expect(await roleEventsFor(user.id)).toEqual([]);
  });

  it.each(["Owner", "admins", "", "Co-Owner"])("400 VALIDATION_FAILED for the role %j", async (role) => {
    const admin = await h.seedUser({ role: "Admin" });
    const user = await h.seedUser();
    await expectAppError(
      h.client.call(UsersRpc.updateRole, { caller: callerOf(admin), address: user.address, role }),
      "validation",
      "VALIDATION_FAILED",
    );
    expect(await roleOf(user.id)).toBe("Base");
  });

  it.each(["0x1234", "not-an-address", `0x${"g".repeat(40)}`])(
    "400 VALIDATION_FAILED for the address %j",
    async (address) => {
      const admin = await h.seedUser({ role: "Admin" });
      await expectAppError(
        h.client.call(UsersRpc.updateRole, { caller: callerOf(admin), address, role: "Base" }),
        "validation",
        "VALIDATION_FAILED",
      );
    },
  );

  it("404 USER_NOT_FOUND for an address no user has", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    await expectAppError(
      h.client.call(UsersRpc.updateRole, {
        caller: callerOf(admin),
        address: randomAddress(),
        role: "Viewer",
      }),
      "not_found",
      "USER_NOT_FOUND",
    );
  });

  it("409 USER_SELF_ACTION when an admin changes its own role", async () => {
    const admin = await h.seedUser({ role: "Admin" });
    await expectAppError(
      h.client.call(UsersRpc.updateRole, {
        caller: callerOf(admin),
        address: admin.address.toLowerCase(),
        role: "Base",
      }),
      "conflict",
      "USER_SELF_ACTION",
    );
    expect(await roleOf(admin.id)).toBe("Admin");
  });

  it("403 ROLE_FORBIDDEN for a caller who is not an Admin", async () => {
    const viewer = await h.seedUser({ role: "Viewer" });
    const user = await h.seedUser();
    await expectAppError(
      h.client.call(UsersRpc.updateRole, { caller: callerOf(viewer), address: user.address, role: "Admin" }),
      "forbidden",
      "ROLE_FORBIDDEN",
    );
  });
});

describe("users.user.set-chain-role (auth service, at sign-in)", () => {
  it("updates a known address, records 'chain' as the author and emits role-changed", async () => {
    const user = await h.seedUser({ role: "Whitelist" });
    const account = await h.client.call(UsersRpc.setChainRole, {
      address: user.address.toLowerCase(),
      role: "Blacklist",
    });
    expect(account).toMatchObject({ id: user.id, role: "Blacklist", isVerified: true });
    expect(await history(user.id)).toEqual([
      { previous_role: "Whitelist", new_role: "Blacklist", changed_by: "chain", source_tx: null },
    ]);
    expect(await h.receivedEvent(UsersEvents.roleChanged, { userId: user.id })).toMatchObject({
      role: "Blacklist",
      previousRole: "Whitelist",
      changedBy: "chain",
    });
  });

  it("answers null for an unknown address", async () => {
    expect(
      await h.client.call(UsersRpc.setChainRole, { address: randomAddress(), role: "Viewer" }),
    ).toBeNull();
  });

  it("the role the user already has: no history row, no event", async () => {
    const user = await h.seedUser({ role: "Viewer" });
    expect(
      await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Viewer" }),
    ).toMatchObject({
      role: "Viewer",
    });
    expect(await history(user.id)).toEqual([]);
    expect(await roleEventsFor(user.id)).toEqual([]);
  });
});

describe("chain.user-status.changed (consumer 'users')", () => {
  let logIndex = 0;
  const fact = (address: string, role: PayloadOf<typeof ChainEvents.userStatusChanged>["role"]) => ({
    origin: {
      chainId: 31337,
      txHash: `0x${(++logIndex).toString(16).padStart(64, "0")}`,
      logIndex,
      blockNumber: 10 + logIndex,
      blockHash: `0x${"cd".repeat(32)}`,
    },
    address,
    role,
  });

  it("sets the role of a known address, recording the transaction", async () => {
    const user = await h.seedUser();
    const event = fact(user.address.toLowerCase(), "Whitelist");
    await h.client.publish(ChainEvents.userStatusChanged, event);
    await waitFor(async () => (await roleOf(user.id)) === "Whitelist", 10_000, "role from the chain");
    expect(await history(user.id)).toEqual([
      { previous_role: "Base", new_role: "Whitelist", changed_by: "chain", source_tx: event.origin.txHash },
    ]);
    expect(await h.receivedEvent(UsersEvents.roleChanged, { userId: user.id })).toMatchObject({
      role: "Whitelist",
      changedBy: "chain",
    });
  });

  it("is idempotent on (chainId, txHash, logIndex): the same fact twice, under new message ids, applies once", async () => {
    const user = await h.seedUser();
    const marker = await h.seedUser();
    const event = fact(user.address, "Viewer");
    await h.client.publish(ChainEvents.userStatusChanged, event);
    // An admin changes the role in between: a replay of the old fact must not override it again.
    await waitFor(async () => (await roleOf(user.id)) === "Viewer", 10_000, "first delivery");
    await h.sql.query(`update users."user" set role = 'Base' where id = $1`, [user.id]);
    await h.client.publish(ChainEvents.userStatusChanged, event, { messageId: "another-delivery" });
    // Facts are consumed one at a time, in order: once the marker's fact is applied, the duplicate was seen.
    await h.client.publish(ChainEvents.userStatusChanged, fact(marker.address, "Blacklist"));
    await waitFor(async () => (await roleOf(marker.id)) === "Blacklist", 10_000, "marker fact");
    expect(await roleOf(user.id)).toBe("Base");
    expect(await history(user.id)).toHaveLength(1);
    expect(await roleEventsFor(user.id)).toHaveLength(1);
    const { rows } = await h.sql.query(
      `select message_key from users.processed_message where consumer = 'users' and message_key = $1`,
      [`31337:${event.origin.txHash}:${event.origin.logIndex}`],
    );
    expect(rows).toHaveLength(1);
  });

  it("a fact about an unknown address is consumed without effect", async () => {
    const marker = await h.seedUser();
    const unknown = fact(randomAddress(), "Admin");
    await h.client.publish(ChainEvents.userStatusChanged, unknown);
    await h.client.publish(ChainEvents.userStatusChanged, fact(marker.address, "Viewer"));
    await waitFor(async () => (await roleOf(marker.id)) === "Viewer", 10_000, "marker fact");
    const processed = await h.sql.query(`select 1 from users.processed_message where message_key = $1`, [
      `31337:${unknown.origin.txHash}:${unknown.origin.logIndex}`,
    ]);
    expect(processed.rows).toHaveLength(1);
    const changes = await h.sql.query(`select 1 from users.role_change where source_tx = $1`, [
      unknown.origin.txHash,
    ]);
    expect(changes.rows).toEqual([]);
  });
});

describe("which role wins: the newer of the admin's change and the chain's (rules.md §7.1)", () => {
  const admin = async () => h.seedUser({ role: "Admin" });
  const demote = async (by: Awaited<ReturnType<typeof admin>>, address: string, role: string) =>
    h.client.call(UsersRpc.updateRole, { caller: callerOf(by), address, role });

  it("an admin's demotion survives sign-ins while the chain says what it said before", async () => {
    const [boss, user] = [await admin(), await h.seedUser()];
    // First sign-in: the chain says Base, as the user's role.
    await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Base" });
    await demote(boss, user.address, "Blacklist");
    const again = await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Base" });
    expect(again).toMatchObject({ role: "Blacklist", chainRole: "Base" });
    expect(await roleOf(user.id)).toBe("Blacklist");
  });

  it("an admin's change stands when the chain was never seen before it", async () => {
    const [boss, user] = [await admin(), await h.seedUser()];
    await demote(boss, user.address, "Blacklist");
    const first = await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Base" });
    expect(first).toMatchObject({ role: "Blacklist", chainRole: "Base" });
  });

  it("a chain change seen after the admin's wins", async () => {
    const [boss, user] = [await admin(), await h.seedUser()];
    await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Base" });
    await demote(boss, user.address, "Blacklist");
    const changed = await h.client.call(UsersRpc.setChainRole, { address: user.address, role: "Whitelist" });
    expect(changed).toMatchObject({ role: "Whitelist", chainRole: "Whitelist" });
    expect((await history(user.id)).map((c) => c.changed_by)).toEqual([String(boss.id), "chain"]);
  });

  it("a chain fact from a block older than the admin's change is recorded but does not override it", async () => {
    const [boss, user, marker] = [await admin(), await h.seedUser(), await h.seedUser()];
    await demote(boss, user.address, "Viewer");
    await h.client.publish(
      ChainEvents.userStatusChanged,
      chainStatusFact(user.address, "Whitelist", { at: new Date(Date.now() - 3_600_000) }),
    );
    await h.client.publish(ChainEvents.userStatusChanged, chainStatusFact(marker.address, "Viewer"));
    await waitFor(async () => (await roleOf(marker.id)) === "Viewer", 10_000, "marker fact");
    expect(await roleOf(user.id)).toBe("Viewer");
    const account = await h.client.call(UsersRpc.byAddress, { address: user.address });
    expect(account).toMatchObject({ role: "Viewer", chainRole: "Whitelist" });
  });

  it("a chain fact from a block after the admin's change wins", async () => {
    const [boss, user] = [await admin(), await h.seedUser()];
    await demote(boss, user.address, "Viewer");
    await h.client.publish(
      ChainEvents.userStatusChanged,
      chainStatusFact(user.address, "Blacklist", { at: new Date(Date.now() + 5_000) }),
    );
    await waitFor(async () => (await roleOf(user.id)) === "Blacklist", 10_000, "newer chain fact");
  });

  it("a fact older than one already applied changes nothing", async () => {
    const [user, marker] = [await h.seedUser(), await h.seedUser()];
    await h.client.publish(
      ChainEvents.userStatusChanged,
      chainStatusFact(user.address, "Whitelist", { block: 50_000 }),
    );
    await waitFor(async () => (await roleOf(user.id)) === "Whitelist", 10_000, "newer fact");
    await h.client.publish(
      ChainEvents.userStatusChanged,
      chainStatusFact(user.address, "Blacklist", { block: 40_000 }),
    );
    await h.client.publish(ChainEvents.userStatusChanged, chainStatusFact(marker.address, "Viewer"));
    await waitFor(async () => (await roleOf(marker.id)) === "Viewer", 10_000, "marker fact");
    expect(await roleOf(user.id)).toBe("Whitelist");
    expect(await h.client.call(UsersRpc.byAddress, { address: user.address })).toMatchObject({
      chainRole: "Whitelist",
    });
  });
});

import { waitFor } from "@fundraise/bus/testing";
import { ChainEvents, ChainRpc, type UserRole } from "@fundraise/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chainStatusFact, type Harness, startHarness } from "../test/harness.ts";

let h: Harness;
/** What the chain index says now, per address (the chain-indexer's `chain.address.role`, served here). */
const indexRole = new Map<string, UserRole>();

beforeAll(async () => {
  h = await startHarness("retraction");
  await h.client.serve(ChainRpc.role, async ({ address }) => ({
    role: indexRole.get(address) ?? "Base",
    indexedBlock: 1,
  }));
});
afterAll(() => h?.stop());

const roleOf = async (userId: number) =>
  (await h.sql.query<{ role: string }>(`select role from users."user" where id = $1`, [userId])).rows[0]
    ?.role;

/** A status fact of its own, dated now. */
const statusFact = (address: string, role: UserRole) => chainStatusFact(address, role, { at: new Date() });

describe("chain.fact.retracted (consumer 'users', index answered by a test stand-in)", () => {
  it("a retracted status fact takes the role back to what the chain index says now", async () => {
    const user = await h.seedUser();
    const fact = statusFact(user.address, "Blacklist");
    await h.client.publish(ChainEvents.userStatusChanged, fact);
    await waitFor(async () => (await roleOf(user.id)) === "Blacklist", 10_000, "role from the fact");

    indexRole.set(user.address, "Base");
    await h.client.publish(ChainEvents.factRetracted, {
      origin: fact.origin,
      retracted: ChainEvents.userStatusChanged.name,
    });
    await waitFor(async () => (await roleOf(user.id)) === "Base", 10_000, "role after the retraction");
    const { rows } = await h.sql.query(
      `select previous_role, new_role, changed_by from users.role_change where user_id = $1 order by id`,
      [user.id],
    );
    expect(rows).toEqual([
      { previous_role: "Base", new_role: "Blacklist", changed_by: "chain" },
      { previous_role: "Blacklist", new_role: "Base", changed_by: "chain" },
    ]);
  });

  it("a retraction of another kind of fact, or of a fact that is no longer the user's last, changes nothing", async () => {
    const user = await h.seedUser();
    const older = statusFact(user.address, "Viewer");
    const newer = statusFact(user.address, "Whitelist");
    await h.client.publish(ChainEvents.userStatusChanged, older);
    await h.client.publish(ChainEvents.userStatusChanged, newer);
    await waitFor(async () => (await roleOf(user.id)) === "Whitelist", 10_000, "the newer fact");
    indexRole.set(user.address, "Base");
    await h.client.publish(ChainEvents.factRetracted, {
      origin: newer.origin,
      retracted: ChainEvents.projectEvaluated.name,
    });
    await h.client.publish(ChainEvents.factRetracted, {
      origin: older.origin,
      retracted: ChainEvents.userStatusChanged.name,
    });
    // A marker retraction, consumed after both (one at a time, in order).
    const marker = await h.seedUser();
    const markerFact = statusFact(marker.address, "Viewer");
    await h.client.publish(ChainEvents.userStatusChanged, markerFact);
    await waitFor(async () => (await roleOf(marker.id)) === "Viewer", 10_000, "marker fact");
    await h.client.publish(ChainEvents.factRetracted, {
      origin: markerFact.origin,
      retracted: ChainEvents.userStatusChanged.name,
    });
    await waitFor(async () => (await roleOf(marker.id)) === "Base", 10_000, "marker retraction");
    expect(await roleOf(user.id)).toBe("Whitelist");
  });
});

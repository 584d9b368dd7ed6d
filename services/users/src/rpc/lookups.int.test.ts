import { UsersRpc } from "@fundraise/protocol";
import { describe, expect, it } from "vitest";
import { useHarness } from "../test/harness.ts";

// by-username and by-ids, asked by the projects service (memberships), over RabbitMQ.
const h = useHarness("lookups");

describe("users.user.by-username and users.user.by-ids", () => {
  it("find users by username in any case, and by ids (existing ones, in id order)", async () => {
    const a = await h.seedUser();
    const b = await h.seedUser({ role: "Viewer" });
    const dto = await h.client.call(UsersRpc.byUsername, { username: ` ${a.username.toUpperCase()} ` });
    expect(dto).toEqual({
      id: a.id,
      name: "Ada",
      surname: "Lovelace",
      address: a.address,
      mailAddress: a.mailAddress,
      username: a.username,
      role: "Base",
      invitations: null,
    });
    expect(await h.client.call(UsersRpc.byUsername, { username: "nobody_here" })).toBeNull();
    // A NUL cannot reach PostgreSQL's text (it broke the query: 503); no stored username holds one.
    for (const username of ["a\u0000b", "\u0000", `${a.username}\u0000`]) {
      expect(await h.client.call(UsersRpc.byUsername, { username })).toBeNull();
    }
    const found = await h.client.call(UsersRpc.byIds, { ids: [b.id, 2_000_000_000, a.id, b.id] });
    expect(found.map((u) => [u.id, u.role])).toEqual([
      [a.id, "Base"],
      [b.id, "Viewer"],
    ]);
    expect(await h.client.call(UsersRpc.byIds, { ids: [] })).toEqual([]);
  });
});

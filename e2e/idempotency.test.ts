import { beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { createPeople, hexOf, newContent, type ProjectDto, type User } from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Retrying a write is safe (rules.md §8.13): an Add retried with its Idempotency-Key, on another gateway
// replica, answers the first answer again and leaves one project.
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let owner: User;

beforeAll(async () => {
  sys = await sharedSystem();
  owner = await people.newUser("Base");
});

describe("Idempotency-Key on the running system", () => {
  it("an Add retried with its key on another replica: the first answer again, one project", async () => {
    const content = newContent("retried add", false);
    const body = {
      projectName: `Retried ${Math.random().toString(36).slice(2, 8)}`,
      fileHex: hexOf(content.file),
    };
    const key = `add-${Math.random().toString(36).slice(2)}`;
    const send = (base: string | undefined) =>
      fetch(`${base ?? sys.gatewayUrl}/Project/Add`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${owner.token}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
        body: JSON.stringify(body),
      });
    const first = await send(sys.gatewayUrls[0]);
    const again = await send(sys.gatewayUrls[1]);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const [a, b] = [
      (await first.json()) as { data: ProjectDto },
      (await again.json()) as { data: ProjectDto },
    ];
    expect(b).toEqual(a);
    const mine = await client.api("GET", "/Project/GetAllPermissioned/false", {
      authorization: `Bearer ${owner.token}`,
    });
    const named = (mine.body.data as ProjectDto[]).filter((p) => p.projectName === body.projectName);
    expect(named.map((p) => p.projectID)).toEqual([a.data.projectID]);
    // The same key with another body is refused and writes nothing.
    const other = await fetch(`${sys.gatewayUrl}/Project/Add`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${owner.token}`,
        "content-type": "application/json",
        "idempotency-key": key,
      },
      body: JSON.stringify({ ...body, projectName: `${body.projectName} 2` }),
    });
    expect(other.status).toBe(409);
  });

  it("the web client's Add retried without a key (its answer lost): 200 with the project it made", async () => {
    const content = newContent("retried without a key", false);
    const body = {
      FileHex: hexOf(content.file),
      ProjectName: `NoKey ${Math.random().toString(36).slice(2, 8)}`,
    };
    const send = () =>
      fetch(`${sys.gatewayUrl}/Project/Add`, {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const first = await send();
    const again = await send();
    expect([first.status, again.status]).toEqual([201, 200]);
    const [a, b] = [
      (await first.json()) as { data: ProjectDto },
      (await again.json()) as { data: ProjectDto },
    ];
    expect(b.data).toEqual(a.data);
  });
});

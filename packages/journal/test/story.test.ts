import { describe, expect, it } from "vitest";
import type { JournalEntry } from "../src/format.ts";
import { buildStory, renderStory, storyRecords } from "../src/index.ts";

const T = Date.UTC(2026, 10, 27, 10, 0, 0, 75);
const R = "0193a0f2-8e5c-7cc1-9b1e-3d1c2b4a5f60";
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const ok = (data: unknown) => json({ data, success: true, message: null });

const entry = (fields: Partial<JournalEntry> & Pick<JournalEntry, "id" | "kind" | "name">): JournalEntry => ({
  at: T,
  service: "gateway",
  requestId: R,
  ...fields,
});
const call = (id: string, name: string, at: number, service: string, causedBy?: string) =>
  entry({
    id,
    kind: "rpc-request",
    name,
    at: T + at,
    service,
    correlationId: `c-${id}`,
    ...(causedBy ? { causedBy } : {}),
    properties: { contentType: "application/json", headers: {} },
    body: json({}),
  });
const reply = (
  request: string,
  name: string,
  at: number,
  service: string,
  error?: [string, string, string],
) =>
  entry({
    id: `r-${request}`,
    kind: "rpc-reply",
    name,
    at: T + at,
    service,
    causedBy: request,
    correlationId: `c-${request}`,
    properties: {
      contentType: "application/json",
      headers: error ? { "x-error-kind": error[0], "x-error-code": error[1] } : {},
    },
    body: error ? json({ data: null, success: false, message: error[2] }) : ok({}),
  });
type Summary = Record<string, unknown>;
const delivery = (event: string, consumer: string, attempt: number, at: number, extra: Summary) =>
  entry({
    id: `${event}@${consumer}#${attempt}`,
    kind: "delivery",
    name: "projects.project.added",
    at: T + at,
    service: consumer,
    messageId: event,
    summary: { consumer, queue: `${consumer}.projects.project.added`, attempt, durationMs: 4, ...extra },
  });
const boom = { message: "Error: boom", kind: "internal", code: "INTERNAL" };

/** A story with everything a story can have; deliberately out of order, as batches of processes arrive. */
function sample(): JournalEntry[] {
  return [
    reply("b", "projects.project.add", 18, "projects"), // written before its request: another process flushed first
    delivery("e", "auth", 3, 3030, { outcome: "acked" }),
    entry({
      id: `http:${R}`,
      kind: "http",
      name: "POST /Project/Add",
      at: T + 48,
      summary: { method: "POST", route: "/Project/Add", status: 201, durationMs: 48 },
    }),
    call("a", "users.user.get", 2, "gateway"),
    reply("a", "users.user.get", 5, "users"),
    call("b", "projects.project.add", 6, "gateway"),
    call("c", "users.user.by-address", 8, "projects", "b"),
    reply("c", "users.user.by-address", 9, "users"),
    entry({
      id: "e",
      kind: "event",
      name: "projects.project.added",
      at: T + 15,
      service: "projects",
      causedBy: "b",
      messageId: "e",
    }),
    delivery("e", "auth", 1, 24, { outcome: "retried", error: boom, retryInMs: 1000 }),
    delivery("e", "auth", 2, 1028, { outcome: "retried", error: boom, retryInMs: 2000 }),
    delivery("e", "notifications", 1, 26, { outcome: "acked" }),
    delivery("e", "audit", 1, 27, { outcome: "dead-lettered", error: { message: "invalid" } }),
    call("n", "users.user.get", 25, "notifications", "e@notifications#1"),
    call("d", "projects.project.update", 30, "gateway"),
    reply("d", "projects.project.update", 42, "projects", [
      "conflict",
      "PROJECT_NAME_TAKEN",
      "That name is taken.",
    ]),
    entry({
      id: "orphan",
      kind: "event",
      name: "users.user.seen",
      at: T + 31,
      service: "users",
      causedBy: "gone",
      redacted: ["/email"],
    }),
    // Format 1: no causedBy; the reply is found by its correlation id.
    entry({
      id: "old",
      kind: "rpc-request",
      name: "chain.project.get",
      at: T + 1000,
      correlationId: "c-old",
    }),
    entry({
      id: "old-reply",
      kind: "rpc-reply",
      name: "chain.project.get",
      at: T + 2000,
      service: "chain",
      correlationId: "c-old",
      body: ok(1),
      properties: {},
    }),
    // The same entry twice (format-1 events may be in the journal twice): shown once.
    call("a", "users.user.get", 2, "gateway"),
  ];
}

describe("buildStory", () => {
  const story = buildStory(sample(), R);
  const [root] = story.roots;
  const find = (
    id: string,
    nodes = story.roots,
  ): ReturnType<typeof buildStory>["roots"][number] | undefined => {
    for (const node of nodes) {
      if (node.entry.id === id) return node;
      const inner = find(id, node.children);
      if (inner) return inner;
    }
    return undefined;
  };

  it("puts the HTTP request on top and starts the story when it started", () => {
    expect(story.roots).toHaveLength(1);
    expect(root?.entry.kind).toBe("http");
    expect(story.start).toBe(T);
    expect(root?.children.map((n) => n.entry.id)).toEqual(["a", "b", "d", "orphan", "old"]);
  });

  it("shows replies with their requests, whatever order they were written in", () => {
    expect(find("a")?.reply?.id).toBe("r-a");
    expect(find("b")?.reply?.id).toBe("r-b");
    expect(find("old")?.reply?.id).toBe("old-reply");
    expect(find("r-b")).toBeUndefined();
  });

  it("nests calls and events under the handling that caused them", () => {
    expect(find("b")?.children.map((n) => n.entry.id)).toEqual(["c", "e"]);
    expect(find("e@notifications#1")?.children.map((n) => n.entry.id)).toEqual(["n"]);
  });

  it("groups an event's deliveries by consumer, tries in order", () => {
    expect(find("e")?.children.map((n) => n.entry.id)).toEqual([
      "e@auth#1",
      "e@auth#2",
      "e@auth#3",
      "e@notifications#1",
      "e@audit#1",
    ]);
  });

  it("has no HTTP root for a request that did not come over HTTP", () => {
    const chain = buildStory(
      sample().filter((e) => e.kind !== "http"),
      R,
    );
    expect(chain.roots.map((n) => n.entry.id)).toEqual(["a", "b", "d", "orphan", "old"]);
    expect(chain.start).toBe(T + 2);
  });
});

describe("renderStory", () => {
  const lines = renderStory(buildStory(sample(), R));

  it("draws the tree with millisecond times from the start", () => {
    expect(lines[0]).toBe(`POST /Project/Add 201 48 ms  2026-11-27T10:00:00.075Z  request ${R} (gateway)`);
    expect(lines[1]).toBe("├─ +2ms    users.user.get (gateway) → users 3 ms ok");
    expect(lines[2]).toBe("├─ +6ms    projects.project.add (gateway) → projects 12 ms ok");
    expect(lines[3]).toBe("│  ├─ +8ms  users.user.by-address (projects) → users 1 ms ok");
    expect(lines[4]).toBe("│  └─ +15ms event projects.project.added (projects)");
    expect(lines[5]).toBe('│     ├─ +20ms   auth  #1 retried 4 ms  "Error: boom"  retry in 1000 ms');
    expect(lines[6]).toBe('│     ├─ +1024ms       #2 retried 4 ms  "Error: boom"  retry in 2000 ms');
    expect(lines[7]).toBe("│     ├─ +3026ms       #3 acked 4 ms");
    expect(lines[8]).toBe("│     ├─ +22ms   notifications  #1 acked 4 ms");
    expect(lines[9]).toBe("│     │  └─ +25ms users.user.get (notifications) no reply");
    expect(lines[10]).toBe('│     └─ +23ms   audit  #1 dead-lettered 4 ms  "invalid"');
  });

  it("shows error replies with their status and code, and replaced personal data", () => {
    expect(lines).toContain(
      '├─ +30ms   projects.project.update (gateway) → projects 12 ms 409 PROJECT_NAME_TAKEN  "That name is taken."',
    );
    expect(lines).toContain("├─ +31ms   event users.user.seen (users)  (personal data replaced)");
    expect(lines.at(-1)).toBe("└─ +1000ms chain.project.get (gateway) → chain 1000 ms ok");
  });

  it("names the request on top when there is no HTTP entry", () => {
    const chain = renderStory(
      buildStory(
        sample().filter((e) => e.kind !== "http"),
        R,
      ),
    );
    expect(chain[0]).toBe(`request ${R}  2026-11-27T10:00:00.077Z`);
    expect(chain[1]).toBe("├─ +0ms   users.user.get (gateway) → users 3 ms ok");
  });
});

describe("storyRecords", () => {
  it("lists every entry once in tree order with depth, parent, position and payload", () => {
    const entries = sample();
    const records = storyRecords(buildStory(entries, R), new Map([["a", "12:3"]]));
    expect(records).toHaveLength(entries.length - 1);
    expect(records.slice(0, 3).map((r) => [r.id, r.depth, r.parent, r.position])).toEqual([
      [`http:${R}`, 0, null, null],
      ["a", 1, `http:${R}`, "12:3"],
      ["r-a", 2, "a", null],
    ]);
    expect(records.find((r) => r.id === "n")).toMatchObject({ depth: 4, parent: "e@notifications#1" });
    expect(records.find((r) => r.id === "r-d")?.payload).toEqual({
      data: null,
      success: false,
      message: "That name is taken.",
    });
    expect(records[1]?.at).toBe("2026-11-27T10:00:00.077Z");
  });
});

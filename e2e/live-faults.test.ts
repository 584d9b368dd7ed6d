import { createClient as createApiClient } from "@fundraise/client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";
import { createClient } from "./client.ts";
import { type System, startSystem } from "./system.ts";

// Live streams when a gateway replica dies under them, on a system of its own: the typed client behind a
// stand-in load balancer (a fetch that sends each connection to the first replica still answering)
// reconnects to the other replica and resumes from its last id, losing and doubling nothing.
let sys: System;
const client = createClient(() => sys);
let token: string;

beforeAll(async () => {
  sys = await startSystem({ services: ["users", "auth", "storage", "projects", "gateway"] });
  const user = await client.signedUpUser();
  token = await client.tokenOf(user.wallet);
});
afterAll(() => sys?.stop());

async function add(name: string): Promise<number> {
  const res = await client.api("POST", "/Project/Add", {
    token,
    body: {
      projectName: `${name} ${Math.random().toString(36).slice(2, 8)}`,
      fileHex: Buffer.from(name).toString("hex"),
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (res.body.data as { projectID: number }).projectID;
}

/** Waits until `check` holds (the path is asynchronous: outbox, broker, stream, hub). */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 50 });

describe("a gateway replica killed with streams attached", () => {
  it("its subscribers reconnect to another replica and get every change once, in order", async () => {
    const port = await freePort();
    const doomed = `http://localhost:${port}`;
    const pid = await sys.startService("gateway", { PORT: String(port) });
    // The load balancer: the doomed replica first while it answers, then the system's own gateway.
    let cutOff = false;
    const balanced = async (request: Request) => {
      if (cutOff) throw new Error("the network is cut");
      for (const base of [doomed, sys.gatewayUrl]) {
        const url = new URL(request.url);
        const target = new URL(`${url.pathname}${url.search}`, base);
        try {
          return await fetch(new Request(target, request));
        } catch {
          // that replica is gone: the next one
        }
      }
      throw new Error("no gateway answers");
    };
    const api = createApiClient({ baseUrl: doomed, token, fetch: balanced });
    const created: number[] = [];
    const ids: string[] = [];
    let opened = 0;
    const subscription = api.subscribe(
      {
        project: (m, meta) => {
          if (m.change === "created") created.push(m.project.projectID);
          if (meta.id) ids.push(meta.id);
        },
        open: () => {
          opened += 1;
        },
      },
      { retryMs: 200 },
    );
    try {
      await eventually(() => expect(opened).toBe(1));
      const before = await add("before the kill");
      await eventually(() => expect(created).toEqual([before]));

      // The replica dies and the client's network is cut while changes are made: they can only come
      // back through Last-Event-ID, from the other replica.
      cutOff = true;
      process.kill(pid, "SIGKILL");
      const during = [await add("while cut off 1"), await add("while cut off 2")];
      await new Promise((r) => setTimeout(r, 500));
      expect(created).toEqual([before]);
      cutOff = false;
      const after = await add("after");
      await eventually(() => expect(created).toEqual([before, ...during, after]));
      expect(opened).toBe(2);
      expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      subscription.close();
    }
  });
});

import { createHash } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../scripts/lib/processes.ts";
import { createClient } from "./client.ts";
import { type System, startSystem } from "./system.ts";

// A client may retry any write after a lost answer (rules.md §8.13, §8.14): the reply path of an Add is cut at
// a moment that moves through the request, in a loop, and the retry on another replica must leave one
// project and answer it; an invitation's reply is lost once the service kept its answer, and the retry
// with its key gets that answer. Replica A reaches the broker through a TCP relay this test cuts (every
// connection destroyed, so its RPCs in flight lose their replies, whether projects committed or not);
// replica B is the system's own gateway.
let sys: System;
const client = createClient(() => sys);
let token: string;
let ownerId: number;
let replicaA: string;
let relay: ReturnType<typeof brokerRelay>;

/**
 * A TCP relay to the broker whose open connections `cut()` destroys; new ones are relayed again. After
 * `deafen()`, what the broker sends replica A is dropped until the cut: a reply on its way is certainly lost.
 */
function brokerRelay(target: URL) {
  const open = new Set<Socket>();
  let deaf = false;
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(target.port || 5672), target.hostname);
    for (const [a, b] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      open.add(a);
      a.on("data", (chunk: Buffer) => {
        if (!(deaf && a === outbound)) b.write(chunk);
      });
      a.on("error", () => b.destroy());
      a.on("close", () => {
        open.delete(a);
        b.destroy();
      });
    }
  });
  return {
    listen: (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)),
    deafen: () => {
      deaf = true;
    },
    cut: () => {
      deaf = false;
      for (const socket of open) socket.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

beforeAll(async () => {
  sys = await startSystem({
    services: ["users", "auth", "storage", "projects", "gateway"],
    // Two dozen Adds by one proposer, none reviewed.
    env: { REVIEW_QUEUE_PER_PROPOSER: "100" },
  });
  const owner = await client.signedUpUser();
  ownerId = owner.userId;
  token = await client.tokenOf(owner.wallet);
  const broker = new URL(sys.amqpUrl);
  relay = brokerRelay(broker);
  const relayPort = await freePort();
  await relay.listen(relayPort);
  const viaRelay = new URL(sys.amqpUrl);
  viaRelay.host = `127.0.0.1:${relayPort}`;
  const port = await freePort();
  replicaA = `http://localhost:${port}`;
  await sys.startService("gateway", { PORT: String(port), AMQP_URL: viaRelay.toString() });
}, 180_000);
afterAll(async () => {
  await sys?.stop();
  await relay?.close();
});

interface Answer<D = { projectID?: number }> {
  status: number;
  code: string | null;
  /** The `Idempotent-Replayed` header: "true" when the answer is a kept first answer. */
  replayed: string | null;
  body: { success?: boolean; data?: D | null } | null;
}

/** An Add on the replica at `base`. */
const send = (base: string, body: unknown, key?: string) => write<Answer>(base, "/Project/Add", body, key);

/** A POST write as the caller `token`, with `key` as its Idempotency-Key when given. */
async function write<A extends Answer<unknown>>(
  base: string,
  path: string,
  body: unknown,
  key?: string,
): Promise<A> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      ...(key ? { "idempotency-key": key } : {}),
    },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    code: res.headers.get("x-error-code"),
    replayed: res.headers.get("idempotent-replayed"),
    body: (await res.json()) as A["body"],
  } as A;
}

/** Retries on replica B while the first request is still under way there (409 IN_USE). */
async function retry<A extends Answer<unknown> = Answer>(
  body: unknown,
  key?: string,
  path = "/Project/Add",
): Promise<A> {
  for (;;) {
    const answer = await write<A>(sys.gatewayUrl, path, body, key);
    if (answer.code !== "IDEMPOTENCY_KEY_IN_USE") return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function projectsNamed(name: string): Promise<number[]> {
  const res = await client.api("GET", "/Project/GetAllPermissioned/false", { token });
  return (res.body.data as { projectID: number; projectName: string }[])
    .filter((p) => p.projectName === name)
    .map((p) => p.projectID);
}

/** Replica A serves again once its broker connection is back. */
const aReady = () =>
  vi.waitFor(
    async () => {
      const res = await fetch(`${replicaA}/readyz`);
      expect(res.status).toBe(200);
    },
    { timeout: 30_000, interval: 100 },
  );

/** Resolves once `sql` finds a row (read straight from the system's database, as fast as it answers). */
async function found(db: pg.Client, what: string, sql: string, params: unknown[]): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const { rowCount } = await db.query(sql, params);
    if (rowCount) return;
  }
  throw new Error(`${what} not found within 30 s`);
}

/** Resolves once the project named `name` is committed. */
const committed = (db: pg.Client, name: string) =>
  found(db, `project ${name}`, "select 1 from projects.project where name = $1", [name]);

describe("an Add whose reply path is cut, retried on another replica", () => {
  // Half the cuts move through the request (0 to 1.2 times an uncut Add's time after it left: before
  // the RPC, while projects and storage work, around the reply); the other half come the moment the
  // project is committed, before its reply reaches replica A: the worst moment.
  for (const withKey of [true, false]) {
    it(`${withKey ? "with an Idempotency-Key" : "without a key (the web client)"}: one project, answered to the retry`, async () => {
      const db = new pg.Client({ connectionString: sys.databaseUrl });
      await db.connect();
      try {
        const bodyOf = (name: string) =>
          withKey
            ? { projectName: name, fileHex: Buffer.from(`cut ${name}`).toString("hex") }
            : { ProjectName: name, FileHex: Buffer.from(`cut ${name}`).toString("hex") };
        // An uncut Add's time on replica A, once the other case's last cut has healed (ready, and
        // answering writes: its RPC replies may come back a moment after its broker connection).
        await aReady();
        let uncutMs = 0;
        await vi.waitFor(
          async () => {
            const t0 = performance.now();
            expect((await send(replicaA, bodyOf(`Uncut ${Math.random()}`))).status).toBe(201);
            uncutMs = performance.now() - t0;
          },
          { timeout: 30_000, interval: 200 },
        );
        const firsts = new Map<string, number>();
        const rounds = 12;
        for (let i = 0; i < rounds; i++) {
          await aReady();
          const tag = `${withKey ? "k" : "n"}${i}-${Math.random().toString(36).slice(2, 8)}`;
          const name = `Cut ${tag}`;
          const body = bodyOf(name);
          const key = withKey ? `cut-${tag}` : undefined;
          const first = send(replicaA, body, key);
          const atCommit = i % 2 === 1;
          if (atCommit) await committed(db, name);
          else await new Promise((resolve) => setTimeout(resolve, (i / rounds) * 1.2 * uncutMs));
          relay.cut();
          const answer = await first;
          const seen = `${atCommit ? "at commit" : "timed"} ${answer.status}`;
          firsts.set(seen, (firsts.get(seen) ?? 0) + 1);
          // Answered, or refused as unavailable: never another 5xx, always the envelope.
          expect([200, 201, 503, 504], JSON.stringify(answer)).toContain(answer.status);
          expect(typeof answer.body?.success).toBe("boolean");

          const again = await retry(body, key);
          expect([200, 201], JSON.stringify(again)).toContain(again.status);
          const ids = await projectsNamed(name);
          expect(ids, name).toHaveLength(1);
          expect(again.body?.data?.projectID).toBe(ids[0]);
          if (answer.status === 201) expect(answer.body?.data?.projectID).toBe(ids[0]);
        }
        // Some first answers were lost (the case the retry is for); the counts show where the cuts fell.
        const summary = JSON.stringify(Object.fromEntries(firsts));
        expect(
          [...firsts.keys()].some((seen) => / 50[34]$/.test(seen)),
          summary,
        ).toBe(true);
      } finally {
        await db.end();
      }
    }, 240_000);
  }
});

describe("an invitation whose reply is lost after its answer was kept, retried with its key on another replica", () => {
  // Each round: replica A sends the invitation and stops hearing the broker; once the projects service
  // committed it and kept its answer, A's connection is cut (its caller gets 503) and the retry goes to
  // replica B with the same key. Without the kept answer the retry would run again: 409, already invited.
  it("answers the retry as the first success (201, the invitation's id), and one invitation exists", async () => {
    const db = new pg.Client({ connectionString: sys.databaseUrl });
    await db.connect();
    try {
      const rounds = 4;
      const tag = Math.random().toString(36).slice(2, 8);
      const [added, ...invitees] = await Promise.all([
        send(sys.gatewayUrl, {
          projectName: `Invites ${tag}`,
          fileHex: Buffer.from(`invites ${tag}`).toString("hex"),
        }),
        ...Array.from({ length: rounds }, () => client.signedUpUser()),
      ]);
      expect(added.status, JSON.stringify(added)).toBe(201);
      const projectID = added.body?.data?.projectID;
      for (const [i, invitee] of invitees.entries()) {
        // Replica A answers again after the last cut: its replies come back, so it asks nothing more of the
        // broker than the invitation (the JWKS and this caller's session are at hand).
        await aReady();
        await vi.waitFor(
          async () => {
            const res = await fetch(`${replicaA}/Project/GetAllPermissioned/false`, {
              headers: { authorization: `Bearer ${token}` },
            });
            expect(res.status).toBe(200);
          },
          { timeout: 30_000, interval: 200 },
        );
        const body = { projectID, username: invitee.username, role: "Editor" };
        const key = `invite-${tag}-${i}`;
        const keyId = `u${ownerId}:${createHash("sha256").update(key).digest("base64url")}`;
        relay.deafen();
        const first = write<Answer<string>>(replicaA, "/user/invite", body, key);
        await found(db, `the answer kept for ${key}`, "select 1 from projects.rpc_answer where key = $1", [
          keyId,
        ]);
        relay.cut();
        const lost = await first;
        expect([503, 504], JSON.stringify(lost)).toContain(lost.status);

        const again = await retry<Answer<string>>(body, key, "/user/invite");
        expect(again.status, JSON.stringify(again)).toBe(201);
        expect(again.replayed).toBe("true");
        const { rows } = await db.query<{ id: number }>(
          "select id from projects.permission where project_id = $1 and user_id = $2",
          [projectID, invitee.userId],
        );
        expect(rows).toHaveLength(1);
        expect(again.body).toMatchObject({ success: true, data: String(rows[0]?.id) });
      }
    } finally {
      await db.end();
    }
  }, 120_000);
});

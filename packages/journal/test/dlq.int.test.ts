import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  type AmqpBus,
  createAmqpBus,
  deadLetterQueueOf,
  Header,
  SUBSCRIPTIONS_STREAM,
  type SubscriptionRecord,
  subscriptionQueueOf,
} from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import { defineEvent, errors } from "@fundraise/protocol";
import amqp, { type ChannelModel } from "amqplib";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/dlq.ts";
import { queueState } from "../src/dlq/broker.ts";
import { testLogger } from "./helpers.ts";

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL("..", import.meta.url));

let vhost: TestVhost;
let bus: AmqpBus;
/** A plain connection of the test's own: depths, hand-made queues and messages. */
let admin: ChannelModel;

beforeAll(async () => {
  vhost = await createTestVhost("dlq_test");
  bus = await createAmqpBus({ url: vhost.url, service: "dlq-test", logger: testLogger() });
  admin = await amqp.connect(vhost.url);
});

afterAll(async () => {
  await admin?.close().catch(() => undefined);
  await bus?.close();
  await vhost?.dispose();
});

/** A subscription that rejects every event (a final `validation` error) while `failing`, counts them after. */
interface Subscription {
  queue: string;
  dlq: string;
  event: string;
  failing: boolean;
  /** messageId → deliveries handled while not failing, with the attempt and request id of the last. */
  seen: Map<string, { count: number; attempt: number; requestId: string }>;
  publish(count: number, requestId?: (i: number) => string): Promise<string[]>;
}

async function subscription(
  consumer: string,
  name: string,
  prefetch = 10,
  queueType: "quorum" | "classic" = "quorum",
): Promise<Subscription> {
  const descriptor = defineEvent(`users.test.${name}`, Type.Object({ n: Type.Integer() }));
  const queue = subscriptionQueueOf(consumer, descriptor.name);
  const sub: Subscription = {
    queue,
    dlq: deadLetterQueueOf(queue),
    event: descriptor.name,
    failing: true,
    seen: new Map(),
    // Publishes events n = 1..count and waits until all of them are dead-lettered; their ids in order.
    async publish(count, requestId = (i) => `req-${name}-${i}`) {
      const before = await depth(sub.dlq);
      const ids: string[] = [];
      for (let n = 1; n <= count; n++) {
        const messageId = randomUUID();
        ids.push(messageId);
        await bus.publish(descriptor, { n }, { messageId, requestId: requestId(n) });
      }
      await waitFor(async () => (await depth(sub.dlq)) === before + count, 20_000, `${count} dead letters`);
      return ids;
    },
  };
  await bus.subscribe(
    consumer,
    descriptor,
    async ({ n }, ctx) => {
      if (sub.failing) {
        throw errors.validation("TEST_REJECTED", n % 2 === 1 ? `odd number ${n}` : `even number ${n}`);
      }
      const count = (sub.seen.get(ctx.messageId)?.count ?? 0) + 1;
      sub.seen.set(ctx.messageId, { count, attempt: ctx.attempt, requestId: ctx.requestId });
    },
    { prefetch, queueType },
  );
  return sub;
}

async function depth(queue: string): Promise<number> {
  const state = await queueState(admin, queue);
  return state.exists ? state.depth : -1;
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI in this process, on the test's vhost. */
async function dlq(...args: string[]): Promise<CliResult> {
  const out = { stdout: "", stderr: "" };
  const code = await main([...args, "--url", vhost.url], {
    out: (text) => {
      out.stdout += text;
    },
    err: (text) => {
      out.stderr += text;
    },
    env: {},
  });
  return { code, ...out };
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function shown(queue: string, ...args: string[]): Promise<Record<string, unknown>[]> {
  const result = await dlq("show", queue, "--json", ...args);
  expect(result).toMatchObject({ code: 0, stderr: "" });
  return jsonLines(result.stdout);
}

/** The next message of a queue, waiting for one to arrive. */
async function getOne(channel: amqp.Channel, queue: string, noAck = false): Promise<amqp.GetMessage> {
  let message: amqp.GetMessage | false = false;
  await waitFor(
    async () => {
      message = await channel.get(queue, { noAck });
      return message !== false;
    },
    5000,
    `a message in ${queue}`,
  );
  return message as unknown as amqp.GetMessage;
}

/** Publishes a record on bus.subscriptions as a subscription's set-up does. */
async function announce(record: SubscriptionRecord): Promise<void> {
  const channel = await admin.createConfirmChannel();
  channel.sendToQueue(SUBSCRIPTIONS_STREAM, Buffer.from(JSON.stringify(record)), { type: "subscription" });
  await channel.waitForConfirms();
  await channel.close();
}

describe("dlq list", () => {
  it("lists every announced dead-letter queue with its depth and the age of its oldest message", async () => {
    const started = Date.now();
    const full = await subscription("listing", "list-full", 1);
    const empty = await subscription("listing", "list-empty");
    const ids = await full.publish(3);

    const result = await dlq("list", "--json");
    expect(result).toMatchObject({ code: 0, stderr: "" });
    const rows = jsonLines(result.stdout);
    const fullRow = rows.find((row) => row.queue === full.dlq);
    expect(fullRow).toMatchObject({
      consumer: "listing",
      event: full.event,
      service: "dlq-test",
      depth: 3,
      gone: false,
    });
    const [head] = await shown(full.dlq, "--limit", "1");
    expect(head?.messageId).toBe(ids[0]);
    expect(fullRow?.oldestAt).toBe(head?.deadLetteredAt);
    expect(Date.parse(String(fullRow?.oldestAt))).toBeGreaterThanOrEqual(started);
    expect(fullRow?.oldestAgeMs).toBeGreaterThanOrEqual(0);
    expect(rows.find((row) => row.queue === empty.dlq)).toMatchObject({ depth: 0, oldestAt: null });
    // Rows come sorted by queue name.
    const names = rows.map((row) => String(row.queue));
    expect(names).toEqual([...names].sort());

    const nonempty = jsonLines((await dlq("--nonempty", "--json")).stdout).map((row) => row.queue);
    expect(nonempty).toContain(full.dlq);
    expect(nonempty).not.toContain(empty.dlq);

    const table = await dlq();
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^DEAD-LETTER QUEUE\s+CONSUMER\s+EVENT\s+SERVICE\s+DEPTH\s+OLDEST/);
    expect(table.stdout).toMatch(
      new RegExp(`${full.dlq.replaceAll(".", "\\.")}\\s+listing\\s+\\S+\\s+dlq-test\\s+3\\s+\\d`),
    );
  });

  it("finds queues through bus.subscriptions: of stopped consumers, deleted ones (gone), the latest record", async () => {
    const retired = await createAmqpBus({ url: vhost.url, service: "retired-service", logger: testLogger() });
    const retiredEvent = defineEvent("users.test.retired", Type.Object({ n: Type.Integer() }));
    await retired.subscribe("retired", retiredEvent, async () => undefined);
    await retired.close();
    const retiredDlq = deadLetterQueueOf(subscriptionQueueOf("retired", retiredEvent.name));

    const deleted = await subscription("deleting", "list-deleted");
    const channel = await admin.createChannel();
    await channel.deleteQueue(deleted.dlq);
    // A consumer that moved to another service announces itself again: the latest record counts.
    const moved = await subscription("moving", "list-moved");
    await announce({
      consumer: "moving",
      event: moved.event,
      queue: moved.queue,
      deadLetterQueue: moved.dlq,
      service: "new-home",
      at: Date.now(),
    });
    // A DLQ nobody announced is listed when named.
    await channel.assertQueue("manual.listed.dlq", { durable: true });
    await channel.close();

    const rows = jsonLines((await dlq("list", "--json", "--queue", "manual.listed.dlq")).stdout);
    const row = (queue: string) => rows.find((r) => r.queue === queue);
    expect(row(retiredDlq)).toMatchObject({ consumer: "retired", service: "retired-service", depth: 0 });
    expect(row(deleted.dlq)).toMatchObject({ consumer: "deleting", depth: null, gone: true });
    expect(row(moved.dlq)).toMatchObject({ service: "new-home" });
    expect(row("manual.listed.dlq")).toMatchObject({ consumer: null, depth: 0, gone: false });
    expect(rows.filter((r) => r.queue === moved.dlq)).toHaveLength(1);
    expect((await dlq()).stdout).toMatch(new RegExp(`${deleted.dlq.replaceAll(".", "\\.")}.*\\bgone\\b`));
    expect((await dlq("--nonempty", "--json")).stdout).not.toContain(deleted.dlq);

    expect(await dlq("show", deleted.dlq)).toEqual({
      code: 2,
      stdout: "",
      stderr: `dlq: ${deleted.dlq} is gone: announced on bus.subscriptions but deleted since\n`,
    });
  });
});

describe("dlq show", () => {
  it("shows each message's fields head first, and leaves the messages in place and in order", async () => {
    const sub = await subscription("showing", "show", 1);
    const ids = await sub.publish(5);

    const first = await shown(sub.dlq, "--payload");
    expect(first.map((m) => m.messageId)).toEqual(ids);
    expect(first[0]).toMatchObject({
      messageId: ids[0],
      event: sub.event,
      requestId: "req-show-1",
      attempts: 1,
      lastError: { message: "odd number 1", kind: "validation", code: "TEST_REJECTED" },
      originalQueue: sub.queue,
      payload: { n: 1 },
    });
    expect(first[1]).toMatchObject({ lastError: { message: "even number 2" }, payload: { n: 2 } });
    expect(Date.parse(String(first[0]?.deadLetteredAt))).toBeLessThanOrEqual(Date.now());
    expect(first[0]?.ageMs).toBeGreaterThanOrEqual(0);

    // Shown again, by the main queue's name: all there, same order; each read was a delivery.
    const second = await shown(sub.queue);
    expect(second.map((m) => m.messageId)).toEqual(ids);
    expect(second[0]).not.toHaveProperty("payload");
    expect(Number(second[0]?.deliveryCount)).toBeGreaterThan(Number(first[0]?.deliveryCount));
    expect(await depth(sub.dlq)).toBe(5);

    expect((await shown(sub.dlq, "--limit", "2")).map((m) => m.messageId)).toEqual(ids.slice(0, 2));
    const text = await dlq("show", sub.dlq, "--limit", "1", "--payload");
    expect(text.stdout).toContain(`#1  ${ids[0]}`);
    expect(text.stdout).toContain("[validation TEST_REJECTED] odd number 1");
    expect(text.stdout).toContain('payload        {"n":1}');
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual(ids);
  });
});

describe("dlq redrive", () => {
  it("moves every message back to its queue as a first attempt, and empties the DLQ", async () => {
    const sub = await subscription("redriving", "redrive-all");
    const ids = await sub.publish(4);
    sub.failing = false;

    const result = await dlq("redrive", sub.queue);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n").sort()).toEqual(ids.map((id) => `${id} → ${sub.queue}`).sort());
    expect(JSON.parse(result.stderr)).toEqual({ matched: 4, moved: 4, returned: 0 });
    await waitFor(() => sub.seen.size === 4, 10_000, "the re-driven events handled");
    for (const id of ids) expect(sub.seen.get(id)).toMatchObject({ count: 1, attempt: 1 });
    expect(sub.seen.get(ids[2]!)?.requestId).toBe("req-redrive-all-3");
    expect(await depth(sub.dlq)).toBe(0);
  });

  it("moves one message by id, by request id or by error text, and keeps the others in order", async () => {
    const sub = await subscription("filtering", "redrive-filter", 1);
    const ids = await sub.publish(6);
    sub.failing = false;

    const one = await dlq("redrive", sub.dlq, "--id", ids[2]!, "--json");
    expect(jsonLines(one.stdout)).toEqual([{ messageId: ids[2], target: sub.queue, action: "moved" }]);
    expect(JSON.parse(one.stderr)).toEqual({ matched: 1, moved: 1, returned: 5 });
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual([ids[0], ids[1], ids[3], ids[4], ids[5]]);

    // The odd ones left (1 and 5), matched in any case; 3 moved already.
    const odd = await dlq("redrive", sub.dlq, "--error", "ODD number");
    expect(odd.stdout).toBe(`${ids[0]} → ${sub.queue}\n${ids[4]} → ${sub.queue}\n`);
    expect(JSON.parse(odd.stderr)).toEqual({ matched: 2, moved: 2, returned: 3 });
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual([ids[1], ids[3], ids[5]]);

    const byRequest = await dlq("redrive", sub.dlq, "--request", "req-redrive-filter-4");
    expect(byRequest.stdout).toBe(`${ids[3]} → ${sub.queue}\n`);
    const limited = await dlq("redrive", sub.dlq, "--limit", "1");
    expect(limited.stdout).toBe(`${ids[1]} → ${sub.queue}\n`);
    expect(JSON.parse(limited.stderr)).toEqual({ matched: 1, moved: 1, returned: 0 });
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual([ids[5]]);

    await waitFor(() => sub.seen.size === 5, 10_000, "five re-driven events handled");
    expect([...sub.seen.keys()].sort()).toEqual([ids[0], ids[1], ids[2], ids[3], ids[4]].sort());
    expect([...sub.seen.values()].every((s) => s.count === 1)).toBe(true);
  });

  it("keeps the order of a classic dead-letter queue too", async () => {
    const sub = await subscription("classic", "redrive-classic", 1, "classic");
    const ids = await sub.publish(5);
    sub.failing = false;
    expect((await shown(sub.dlq, "--limit", "2")).map((m) => m.messageId)).toEqual(ids.slice(0, 2));
    const odd = await dlq("redrive", sub.dlq, "--error", "odd");
    expect(JSON.parse(odd.stderr)).toEqual({ matched: 3, moved: 3, returned: 2 });
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual([ids[1], ids[3]]);
    await waitFor(() => sub.seen.size === 3, 10_000, "the odd ones handled");
  });

  it("on a dry run prints what would move and moves nothing", async () => {
    const sub = await subscription("dry", "redrive-dry", 1);
    const ids = await sub.publish(3);
    const result = await dlq("redrive", sub.queue, "--dry-run", "--error", "odd");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `${ids[0]} → ${sub.queue}  (dry run: not moved)\n${ids[2]} → ${sub.queue}  (dry run: not moved)\n`,
    );
    expect(JSON.parse(result.stderr)).toEqual({ matched: 2, moved: 0, returned: 3 });
    expect((await shown(sub.dlq)).map((m) => m.messageId)).toEqual(ids);
  });

  it("copies a broker dead letter back to the queue it died in, with a fresh history", async () => {
    const channel = await admin.createConfirmChannel();
    // A queue whose rejected messages the broker dead-letters itself, with x-death.
    await channel.assertQueue("manual.work", {
      arguments: { "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "manual.work.dlq" },
    });
    await channel.assertQueue("manual.work.dlq");
    await channel.bindQueue("manual.work", "events", "users.test.manual");
    const headers = {
      [Header.REQUEST_ID]: "req-manual",
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      [Header.PUBLISHED_BY]: "tests",
    };
    channel.publish("events", "users.test.manual", Buffer.from('{"n":7}'), {
      messageId: "manual-1",
      type: "users.test.manual",
      contentType: "application/json",
      timestamp: Math.floor(Date.now() / 1000),
      persistent: true,
      headers,
    });
    await channel.waitForConfirms();
    const rejected = await getOne(channel, "manual.work");
    channel.nack(rejected, false, false);
    await waitFor(async () => (await depth("manual.work.dlq")) === 1, 5000, "the broker's dead letter");

    const [letter] = await shown("manual.work.dlq");
    expect(letter).toMatchObject({
      messageId: "manual-1",
      event: "users.test.manual",
      requestId: "req-manual",
      attempts: null,
      lastError: { message: "dead-lettered by the broker: rejected", kind: null },
      originalQueue: "manual.work",
    });
    const before = Date.now();
    expect((await dlq("redrive", "manual.work")).stdout).toBe("manual-1 → manual.work\n");

    const { properties, content } = await getOne(channel, "manual.work", true);
    expect(content.toString()).toBe('{"n":7}');
    expect(properties).toMatchObject({
      messageId: "manual-1",
      type: "users.test.manual",
      contentType: "application/json",
    });
    expect(properties.headers).toMatchObject({
      ...headers,
      [Header.ATTEMPT]: 1,
      [Header.ORIGINAL_ROUTING_KEY]: "users.test.manual",
      "x-redriven-from": "manual.work.dlq",
    });
    expect(Number(properties.headers?.["x-redriven-at"])).toBeGreaterThanOrEqual(before);
    for (const name of [
      "x-death",
      "x-first-death-queue",
      "x-delivery-count",
      Header.LAST_ERROR,
      Header.DEAD_LETTERED_AT,
    ]) {
      expect(properties.headers).not.toHaveProperty(name);
    }
    await channel.close();
  });

  it("refuses a target queue that does not exist, before moving anything", async () => {
    const channel = await admin.createConfirmChannel();
    await channel.assertQueue("orphan.thing.dlq");
    for (const id of ["orphan-1", "orphan-2"]) {
      channel.sendToQueue("orphan.thing.dlq", Buffer.from("{}"), {
        messageId: id,
        headers: { [Header.ORIGINAL_QUEUE]: "orphan.thing", [Header.LAST_ERROR]: "boom" },
      });
    }
    await channel.waitForConfirms();
    await channel.close();
    expect(await dlq("redrive", "orphan.thing.dlq")).toEqual({
      code: 2,
      stdout: "",
      stderr: "dlq: target queue orphan.thing of message orphan-1 does not exist; nothing moved\n",
    });
    expect((await shown("orphan.thing.dlq")).map((m) => m.messageId)).toEqual(["orphan-1", "orphan-2"]);
  });
});

describe("dlq redrive after a crash (kill -9)", () => {
  /** The CLI as a process of its own, on the test's vhost. */
  const spawnCli = (args: string[], env: Record<string, string> = {}): ChildProcess =>
    spawn(process.execPath, ["--import", "tsx", "src/cli/dlq.ts", ...args, "--url", vhost.url], {
      cwd: packageDir,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
  const exited = (child: ChildProcess) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }>((resolve) => {
      let stdout = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.on("exit", (code, signal) => resolve({ code, signal, stdout }));
    });

  /** Every message arrived exactly once and nothing is left anywhere. */
  async function expectExactlyOnce(sub: Subscription, ids: string[]): Promise<void> {
    await waitFor(() => sub.seen.size === ids.length, 30_000, "every re-driven event handled");
    // Nothing in flight any more: no second copy can still arrive.
    await waitFor(
      async () => {
        const counts = await vhost.queueCounts(sub.queue);
        return counts.ready === 0 && counts.unacknowledged === 0;
      },
      // Each look is a rabbitmqctl call: a second, several on a busy machine.
      30_000,
      "the original queue drained",
    );
    expect([...sub.seen.keys()].sort()).toEqual([...ids].sort());
    expect([...sub.seen.values()].filter((s) => s.count !== 1)).toEqual([]);
    expect(await depth(sub.dlq)).toBe(0);
  }

  it("loses none and delivers none twice when killed mid-transaction, then run again", async () => {
    const sub = await subscription("crashing", "redrive-crash");
    const ids = await sub.publish(120);
    const order = (await shown(sub.dlq, "--limit", "500")).map((m) => m.messageId);
    sub.failing = false;

    const crashed = await exited(spawnCli(["redrive", sub.queue], { DLQ_TEST_CRASH_AFTER: "37" }));
    expect(crashed.signal).toBe("SIGKILL");
    // 37 committed; the 38th was published and acknowledged, not committed.
    expect(crashed.stdout.trim().split("\n")).toHaveLength(37);
    await waitFor(async () => (await depth(sub.dlq)) === 120 - 37, 10_000, "the uncommitted message back");
    // What the dead process held went back in its order.
    expect((await shown(sub.dlq, "--limit", "500")).map((m) => m.messageId)).toEqual(order.slice(37));

    const again = await exited(spawnCli(["redrive", sub.queue]));
    expect(again).toMatchObject({ code: 0, signal: null });
    expect(again.stdout.trim().split("\n")).toHaveLength(120 - 37);
    await expectExactlyOnce(sub, ids);
  });

  it("loses none and delivers none twice when killed from outside while it works", async () => {
    const sub = await subscription("killed", "redrive-kill");
    const ids = await sub.publish(300);
    const order = (await shown(sub.dlq, "--limit", "500")).map((m) => m.messageId);
    sub.failing = false;

    const child = spawnCli(["redrive", sub.queue]);
    const done = exited(child);
    await waitFor(() => sub.seen.size >= 20 || child.exitCode !== null, 30_000, "the re-drive under way");
    child.kill("SIGKILL");
    await done;
    // Every message either moved (and is handled) or is back in the DLQ, the latter in their order.
    await waitFor(
      async () => (await depth(sub.dlq)) + sub.seen.size === ids.length,
      10_000,
      "the moved ones handled and the others back",
    );
    const left = (await shown(sub.dlq, "--limit", "500")).map((m) => m.messageId);
    expect(left).toEqual(order.filter((id) => !sub.seen.has(String(id))));
    // Wherever the kill landed (even after the end), a second run moves what is left.
    const again = await exited(spawnCli(["redrive", sub.queue]));
    expect(again.code).toBe(0);
    await expectExactlyOnce(sub, ids);
  });
});

describe("dlq bad input", () => {
  it.each([
    [["frob"], 'dlq: unknown subcommand "frob" (list, show, redrive; see --help)'],
    [["show"], "dlq: show needs a queue: pnpm dlq -- show <queue>"],
    [["redrive"], "dlq: redrive needs a queue: pnpm dlq -- redrive <queue>"],
    [["show", "a.b", "--limit", "0"], '--limit must be a positive integer, not "0"'],
    [["show", "a.b", "--limit", "x"], '--limit must be a positive integer, not "x"'],
    [["redrive", "a.b", "--limit", "-2"], "--limit must be a positive integer"],
    [["show", "a.b", "--bogus"], "dlq: unknown option --bogus"],
    [["list", "--payload"], "dlq: --payload is not an option of list"],
    [
      ["show", "nothing.here"],
      "dlq: no dead-letter queue nothing.here.dlq: not announced on bus.subscriptions",
    ],
    [["redrive", "nothing.here.dlq"], "dlq: no dead-letter queue nothing.here.dlq"],
    [["list", "--queue", "nothing.here"], "dlq: no dead-letter queue nothing.here.dlq"],
  ])("%j exits with 2 and one line", async (args, line) => {
    const result = await dlq(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(line);
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("exits with 1 and one line without the password when the broker is unreachable", async () => {
    const out = { stdout: "", stderr: "" };
    const code = await main(["--url", "amqp://guest:s3cret@127.0.0.1:1/x"], {
      out: (text) => {
        out.stdout += text;
      },
      err: (text) => {
        out.stderr += text;
      },
      env: {},
    });
    expect(code).toBe(1);
    expect(out.stderr).toMatch(/^dlq: cannot connect to amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1\/x: .+\n$/);
    expect(out.stderr).not.toContain("s3cret");
  });

  it("as a process: --help documents every subcommand; bad input exits 2", async () => {
    const help = await run(process.execPath, ["--import", "tsx", "src/cli/dlq.ts", "--", "--help"], {
      cwd: packageDir,
    });
    for (const word of ["list", "show <queue>", "redrive <queue>", "--dry-run", "--payload", "Examples:"]) {
      expect(help.stdout).toContain(word);
    }
    const failed = await run(process.execPath, ["--import", "tsx", "src/cli/dlq.ts", "nope"], {
      cwd: packageDir,
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect(failed).toMatchObject({
      code: 2,
      stdout: "",
      stderr: 'dlq: unknown subcommand "nope" (list, show, redrive; see --help)\n',
    });
  });
});

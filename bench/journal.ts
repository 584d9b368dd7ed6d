/**
 * `pnpm bench:journal`: how long a request's story takes to find in a long journal. A vhost of its own is
 * filled through the real writer (JournalWriter: its batches, headers and late stream) with `--entries`
 * entries (default 1,000,000) over `--minutes` (default 11) of real time, since the stream seeks by the
 * broker's clock: six entries per request as a write makes them (the HTTP request, an RPC and its reply, an
 * event, two consumers' handling). One request, written a minute in, is the one looked for ten minutes later;
 * its story also has a consumer's retry 30 s after it and a re-driven dead letter five minutes after it.
 * Then, in alternating runs, `findStory` (the `replay --request` path) against a full scan of the stream
 * that decodes every batch and keeps that request's entries (what a reader without the time in the id and
 * the late stream must do). Prints each one's median, their ratio, and the entries each found.
 *
 *   pnpm bench:journal [-- --entries 1000000 --minutes 11 --runs 3]
 */
import { parseArgs } from "node:util";
import { deliveryId, type JournalNote, uuidv7 } from "@fundraise/bus";
import { createTestVhost } from "@fundraise/bus/testing";
import {
  declareJournal,
  entriesOf,
  findStory,
  JOURNAL_QUEUE,
  JournalWriter,
  streamBounds,
} from "@fundraise/journal";
import amqp, { type ChannelModel } from "amqplib";
import pino from "pino";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    entries: { type: "string", default: "1000000" },
    minutes: { type: "string", default: "11" },
    runs: { type: "string", default: "3" },
  },
});
const total = Number(values.entries);
const minutes = Number(values.minutes);
const runs = Math.max(1, Number(values.runs));
const PER_REQUEST = 6;

const log = pino({ level: "warn" });
const vhost = await createTestVhost("bench_journal");
const connection = await amqp.connect(vhost.url);
const channel = await connection.createChannel();
await declareJournal(connection, { maxAge: "7D", log });
const writer = new JournalWriter({ service: "bench", log, channel: () => channel }, { flushMs: 100 });

/** A request's six entries, shaped and sized as the bus writes them. */
function requestNotes(requestId: string, at: number): JournalNote[] {
  const call = uuidv7(at);
  const correlationId = uuidv7(at);
  const event = uuidv7(at);
  const properties = (type: string) => ({
    messageId: uuidv7(at),
    correlationId,
    timestamp: Math.floor(at / 1000),
    type,
    contentType: "application/json",
    headers: { "x-request-id": requestId, "x-bus-kind": "rpc-request", "x-published-by": "gateway" },
  });
  const body = (value: unknown) => Buffer.from(JSON.stringify(value));
  const caller = { userId: 4242, address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", role: "Base" };
  return [
    {
      kind: "rpc-request",
      id: call,
      name: "projects.project.rate",
      at,
      requestId,
      correlationId,
      message: {
        properties: properties("projects.project.rate"),
        body: body({ caller, projectID: 17, rating: 4 }),
      },
    },
    {
      kind: "rpc-reply",
      id: uuidv7(at),
      name: "projects.project.rate",
      at: at + 4,
      requestId,
      causedBy: call,
      correlationId,
      message: {
        properties: properties("projects.project.rate"),
        body: body({ data: 4.5, success: true, message: null }),
      },
    },
    {
      kind: "event",
      id: event,
      name: "projects.project.changed",
      at: at + 6,
      requestId,
      causedBy: call,
      messageId: event,
      message: {
        properties: properties("projects.project.changed"),
        body: body({ projectId: 17, fields: ["rating"] }),
      },
    },
    ...["gateway-live", "storage"].map(
      (consumer): JournalNote => ({
        kind: "delivery",
        id: deliveryId(event, consumer, 1),
        name: "projects.project.changed",
        at: at + 8,
        requestId,
        messageId: event,
        summary: {
          consumer,
          queue: `${consumer}.projects.project.changed`,
          attempt: 1,
          outcome: "acked",
          durationMs: 2,
        },
      }),
    ),
    {
      kind: "http",
      id: `http:${requestId}`,
      name: "PUT /Project/Rate/:id/:rating",
      at: at + 9,
      requestId,
      summary: { method: "PUT", route: "/Project/Rate/:id/:rating", status: 200, durationMs: 9 },
    },
  ];
}

/** What the target's story has beyond its first moment: a retry 30 s on, a re-driven dead letter 5 min on. */
function lateNotes(requestId: string, event: string, at: number): JournalNote[] {
  const outcome = (attempt: number, result: string, when: number, round?: string): JournalNote => ({
    kind: "delivery",
    id: deliveryId(event, "storage", attempt, round),
    name: "projects.project.changed",
    at: when,
    requestId,
    messageId: event,
    summary: {
      consumer: "storage",
      queue: "storage.projects.project.changed",
      attempt,
      outcome: result,
      durationMs: 3,
    },
  });
  return [
    outcome(2, "dead-lettered", at + 30_000),
    outcome(1, "acked", at + 300_000, `redriven-${at + 299_000}`),
  ];
}

async function fill(): Promise<{ target: string; written: number }> {
  const requests = Math.ceil(total / PER_REQUEST);
  const started = Date.now();
  const perMs = requests / (minutes * 60_000);
  const targetIndex = Math.floor(perMs * 60_000);
  let target = "";
  let targetEvent = "";
  let targetAt = 0;
  const late: JournalNote[] = [];
  for (let i = 0; i < requests; i++) {
    // Paced by the clock: request i is written at its share of the run.
    const due = started + i / perMs;
    if (due > Date.now() + 20) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    const at = Date.now();
    const requestId = uuidv7(at);
    const notes = requestNotes(requestId, at);
    if (i === targetIndex) {
      target = requestId;
      targetEvent = notes[2]?.id as string;
      targetAt = at;
      late.push(...lateNotes(requestId, targetEvent, at));
    }
    for (const note of notes) writer.record(note);
    while (late.length > 0 && (late[0] as JournalNote).at <= at) writer.record(late.shift() as JournalNote);
    if (i % 20_000 === 0)
      process.stderr.write(`  ${i * PER_REQUEST} entries, ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  }
  for (const note of late) writer.record(note);
  writer.flush();
  process.stderr.write(`target ${target} written at ${new Date(targetAt).toISOString()}\n`);
  return { target, written: requests * PER_REQUEST };
}

/** Every batch of the main stream decoded, the target's entries kept. */
async function fullScan(conn: ChannelModel, requestId: string): Promise<number> {
  const { last } = await streamBounds(conn, JOURNAL_QUEUE);
  const ch = await conn.createChannel();
  await ch.prefetch(1000);
  let found = 0;
  await new Promise<void>((resolve) => {
    void ch.consume(
      JOURNAL_QUEUE,
      (message) => {
        if (!message) return;
        ch.ack(message);
        for (const entry of entriesOf(message)) if (entry.requestId === requestId) found++;
        if ((message.properties.headers?.["x-stream-offset"] as number) >= (last ?? 0)) resolve();
      },
      { arguments: { "x-stream-offset": "first" } },
    );
  });
  await ch.close();
  return found;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

try {
  process.stderr.write(`filling ${total.toLocaleString("en")} entries over ${minutes} min\n`);
  const { target, written } = await fill();
  const story: number[] = [];
  const scan: number[] = [];
  let storyEntries = 0;
  let scanEntries = 0;
  for (let run = 0; run < runs; run++) {
    const a = await timed(() => findStory({ url: vhost.url, requestId: target }));
    storyEntries = a.value.entries.length;
    story.push(a.ms);
    const b = await timed(() => fullScan(connection, target));
    scanEntries = b.value;
    scan.push(b.ms);
  }
  const s = median(story);
  const f = median(scan);
  console.log(
    `journal: ${written.toLocaleString("en")} entries over ${minutes} min; the story of a request from ${minutes - 1} min before the end`,
  );
  console.log(
    `  story (replay --request): ${s.toFixed(0)} ms median (${story.map((v) => v.toFixed(0)).join(", ")}), ${storyEntries} entries`,
  );
  console.log(
    `  full scan of the stream:  ${f.toFixed(0)} ms median (${scan.map((v) => v.toFixed(0)).join(", ")}), ${scanEntries} entries of the main stream`,
  );
  console.log(`  story / full scan: ${(s / f).toFixed(3)}x (target: story <= 1000 ms)`);
} finally {
  await connection.close().catch(() => undefined);
  await vhost.dispose();
}

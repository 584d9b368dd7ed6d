import { Header, stringHeader } from "@fundraise/bus";
import { HTTP_STATUS_OF_KIND, isErrorKind } from "@fundraise/protocol";
import type { JournalEntry } from "../format.ts";
import { isoMs } from "../read/positions.ts";
import { type JournalRecord, payloadOf, recordOf } from "../records.ts";
import { attemptOf, consumerOf, type Story, type StoryNode, startOf } from "./tree.ts";

export interface RenderOptions {
  /** What the story's id is, for the root line of a story without one HTTP request (default "request"). */
  of?: "request" | "trace";
}

const REDACTED = "(personal data replaced)";

/**
 * The story as terminal lines: the HTTP request (or the id) on top, then a tree in causal order. Each line
 * starts with `+<ms>` since the story's start and names the service that wrote the entry.
 */
export function renderStory(story: Story, options: RenderOptions = {}): string[] {
  const [only] = story.roots;
  const http = story.roots.length === 1 && only?.entry.kind === "http" ? only : undefined;
  const lines = [
    http ? httpRootLine(http.entry, story) : `${options.of ?? "request"} ${story.id}  ${isoMs(story.start)}`,
  ];
  drawChildren(http ? http.children : story.roots, "", story, lines, false);
  return lines;
}

function drawChildren(
  nodes: StoryNode[],
  indent: string,
  story: Story,
  lines: string[],
  deliveries: boolean,
) {
  let previousConsumer: string | undefined;
  // Times padded to one width among siblings: a consumer's later tries line up under its first.
  const times = nodes.map((node) => `+${Math.round(startOf(node.entry) - story.start)}ms`);
  const width = Math.max(0, ...times.map((time) => time.length));
  nodes.forEach((node, i) => {
    const last = i === nodes.length - 1;
    const consumer = deliveries && node.entry.kind === "delivery" ? consumerOf(node.entry) : undefined;
    const repeat = consumer !== undefined && consumer === previousConsumer;
    previousConsumer = consumer;
    lines.push(`${indent}${last ? "└─ " : "├─ "}${times[i]!.padEnd(width)} ${describe(node, repeat)}`);
    drawChildren(
      node.children,
      `${indent}${last ? "   " : "│  "}`,
      story,
      lines,
      node.entry.kind === "event",
    );
  });
}

function httpRootLine(entry: JournalEntry, story: Story): string {
  const request = entry.requestId === undefined ? "" : `  request ${entry.requestId}`;
  return `${httpText(entry)}  ${isoMs(story.start)}${request} (${entry.service})${redacted(entry)}`;
}

function httpText(entry: JournalEntry): string {
  const { status, durationMs } = entry.summary ?? {};
  return `${entry.name} ${String(status ?? "?")} ${String(durationMs ?? "?")} ms`;
}

/** One node's line after its time. `repeat`: a later try of the consumer on the line above. */
function describe(node: StoryNode, repeat: boolean): string {
  const { entry } = node;
  switch (entry.kind) {
    case "rpc-request":
      return `${entry.name} (${entry.service}) ${replyText(entry, node.reply)}${redacted(entry, node.reply)}`;
    case "event":
      return `event ${entry.name} (${entry.service})${redacted(entry)}`;
    case "delivery":
      return deliveryText(entry, repeat) + redacted(entry);
    case "rpc-reply":
      return `reply ${entry.name} (${entry.service}), its request is not in the journal: ${outcomeOf(entry)}${redacted(entry)}`;
    case "http":
      return `${httpText(entry)}  request ${entry.requestId ?? "?"} (${entry.service})${redacted(entry)}`;
    default:
      return `${String(entry.kind)} ${entry.name} (${entry.service})`;
  }
}

/** `→ users 3 ms ok`, `→ projects 12 ms 409 PROJECT_NAME_TAKEN "…"`, or `no reply`. */
function replyText(request: JournalEntry, reply: JournalEntry | undefined): string {
  if (!reply) return "no reply";
  return `→ ${reply.service} ${Math.round(reply.at - request.at)} ms ${outcomeOf(reply)}`;
}

/** `ok`, or the HTTP status of the error's kind, its code and its message. */
export function outcomeOf(reply: JournalEntry): string {
  const headers = reply.properties?.headers;
  const kind = stringHeader(headers, Header.ERROR_KIND);
  const envelope = payloadOf(reply) as { success?: unknown; message?: unknown } | undefined;
  if (kind === undefined && envelope?.success !== false) return "ok";
  const status = kind !== undefined && isErrorKind(kind) ? HTTP_STATUS_OF_KIND[kind] : 500;
  const code = stringHeader(headers, Header.ERROR_CODE) ?? "INTERNAL";
  const message = typeof envelope?.message === "string" ? `  ${JSON.stringify(envelope.message)}` : "";
  return `${status} ${code}${message}`;
}

/** `auth  #1 retried 4 ms  "Error: boom"  retry in 1000 ms`; a later try leaves the consumer blank. */
function deliveryText(entry: JournalEntry, repeat: boolean): string {
  const summary = entry.summary ?? {};
  const consumer = consumerOf(entry);
  const parts = [
    `${repeat ? " ".repeat(consumer.length) : consumer}  #${attemptOf(entry)} ${String(summary.outcome ?? "?")} ${String(summary.durationMs ?? "?")} ms`,
  ];
  const error = summary.error as { message?: unknown } | undefined;
  if (error && typeof error.message === "string") parts.push(JSON.stringify(error.message));
  if (typeof summary.retryInMs === "number") parts.push(`retry in ${summary.retryInMs} ms`);
  if (entry.service !== consumer) parts.push(`(${entry.service})`);
  return parts.join("  ");
}

function redacted(...entries: Array<JournalEntry | undefined>): string {
  return entries.some((entry) => entry?.redacted?.length) ? `  ${REDACTED}` : "";
}

/** One JSON line of a story: the entry's record with its place in the tree. */
export type StoryRecord = Omit<JournalRecord, "position"> & {
  depth: number;
  /** The id of the entry above it in the tree; null at the top. */
  parent: string | null;
  /** `<offset>:<index>` in bus.journal, `late:<offset>:<index>` when found only in the late stream. */
  position: string | null;
};

/** The story as records in tree order (a request's reply right after it, one level down). */
export function storyRecords(
  story: Story,
  positions: ReadonlyMap<string, string> = new Map(),
): StoryRecord[] {
  const out: StoryRecord[] = [];
  const add = (entry: JournalEntry, depth: number, parent: string | null) => {
    out.push({ depth, parent, ...recordOf(entry, ""), position: positions.get(entry.id) ?? null });
  };
  const walk = (nodes: StoryNode[], depth: number, parent: string | null) => {
    for (const node of nodes) {
      add(node.entry, depth, parent);
      if (node.reply) add(node.reply, depth + 1, node.entry.id);
      walk(node.children, depth + 1, node.entry.id);
    }
  };
  walk(story.roots, 0, null);
  return out;
}

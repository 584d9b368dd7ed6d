import type { DeadLetter } from "./message.ts";
import type { RedriveLine } from "./redrive.ts";

/** One dead-letter queue as `list` reports it. */
export interface QueueRow {
  queue: string;
  /** Unknown for a queue given with --queue that no subscription announced. */
  consumer: string | undefined;
  event: string | undefined;
  service: string | undefined;
  /** Messages ready; undefined when the queue is gone. */
  depth: number | undefined;
  /** When its head message was dead-lettered (ms). */
  oldestAt: number | undefined;
  gone: boolean;
}

/** A duration the way an operator reads it: its two largest units ("3d 4h", "5m 2s"). */
export function formatAge(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3_600);
  const minutes = Math.floor((total % 3_600) / 60);
  const seconds = total % 60;
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${minutes}m`;
  if (minutes > 0) return `${minutes}m ${seconds}s`;
  return `${seconds}s`;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

export function queueRowJson(row: QueueRow, now: number): string {
  return JSON.stringify({
    queue: row.queue,
    consumer: row.consumer ?? null,
    event: row.event ?? null,
    service: row.service ?? null,
    depth: row.depth ?? null,
    oldestAt: iso(row.oldestAt),
    oldestAgeMs: row.oldestAt === undefined ? null : now - row.oldestAt,
    gone: row.gone,
  });
}

export function queueTable(rows: QueueRow[], now: number): string {
  const header = ["DEAD-LETTER QUEUE", "CONSUMER", "EVENT", "SERVICE", "DEPTH", "OLDEST"];
  const cells = rows.map((row) => [
    row.queue,
    row.consumer ?? "-",
    row.event ?? "-",
    row.service ?? "-",
    row.gone ? "gone" : String(row.depth ?? "-"),
    row.oldestAt === undefined ? "-" : formatAge(now - row.oldestAt),
  ]);
  return table(header, cells, new Set([4]));
}

/** Left-aligned columns, the numeric ones (`right`) right-aligned. */
function table(header: string[], rows: string[][], right: Set<number>): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (right.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[header, ...rows].map(line).join("\n")}\n`;
}

export interface ShownLetter extends DeadLetter {
  /** With --payload: the decoded body. */
  payload?: unknown;
}

export function letterJson(letter: ShownLetter, now: number): string {
  return JSON.stringify({
    messageId: letter.messageId ?? null,
    event: letter.event ?? null,
    requestId: letter.requestId ?? null,
    attempts: letter.attempts ?? null,
    lastError: {
      message: letter.lastError.message ?? null,
      kind: letter.lastError.kind ?? null,
      code: letter.lastError.code ?? null,
    },
    deadLetteredAt: iso(letter.deadLetteredAt),
    ageMs: letter.deadLetteredAt === undefined ? null : now - letter.deadLetteredAt,
    originalQueue: letter.originalQueue,
    deliveryCount: letter.deliveryCount,
    ...("payload" in letter ? { payload: letter.payload } : {}),
  });
}

/** One message as a block of labelled lines; messages are numbered from the head (1). */
export function letterBlock(letter: ShownLetter, position: number, now: number): string {
  const error = letter.lastError;
  const kind = [error.kind, error.code].filter((part) => part !== undefined).join(" ");
  const at = letter.deadLetteredAt;
  const lines = [
    `#${position}  ${letter.messageId ?? "(no message id)"}`,
    `  event          ${letter.event ?? "-"}`,
    `  request id     ${letter.requestId ?? "-"}`,
    `  attempts       ${letter.attempts ?? "-"}   delivery count ${letter.deliveryCount}`,
    `  last error     ${kind === "" ? "" : `[${kind}] `}${error.message ?? "-"}`,
    `  dead-lettered  ${at === undefined ? "-" : `${iso(at)} (${formatAge(now - at)} ago)`}`,
    `  original queue ${letter.originalQueue}`,
  ];
  if ("payload" in letter) lines.push(`  payload        ${JSON.stringify(letter.payload)}`);
  return `${lines.join("\n")}\n`;
}

export function redriveLineText(line: RedriveLine): string {
  const suffix = line.action === "would-move" ? "  (dry run: not moved)" : "";
  return `${line.messageId ?? "(no message id)"} → ${line.target}${suffix}\n`;
}

export function redriveLineJson(line: RedriveLine): string {
  return `${JSON.stringify({ messageId: line.messageId ?? null, target: line.target, action: line.action })}\n`;
}

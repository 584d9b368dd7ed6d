import type { JournalEntry } from "../format.ts";

/** One entry of a story and what it caused. */
export interface StoryNode {
  entry: JournalEntry;
  /** rpc-request: its reply, shown on the same line. */
  reply?: JournalEntry;
  children: StoryNode[];
}

/** A request's (or trace's) entries as a causal tree. */
export interface Story {
  /** The request or trace id the story is of. */
  id: string;
  /** When it started (ms): the HTTP request's start, else the earliest entry's. */
  start: number;
  /**
   * The top of the tree: one HTTP request's node when the story has exactly one (the root line); otherwise
   * every node without a known cause, shown under the id.
   */
  roots: StoryNode[];
}

/** When an entry's work started: `at` is the end of an HTTP request and of a delivery (their duration before). */
export function startOf(entry: JournalEntry): number {
  if (entry.kind !== "http" && entry.kind !== "delivery") return entry.at;
  const duration = entry.summary?.durationMs;
  return typeof duration === "number" ? entry.at - duration : entry.at;
}

/**
 * The story of `entries` as a tree, whatever order they were read in (processes flush their batches
 * independently: a reply may be in the journal before its request). Parents: a reply goes with its request
 * (by causedBy, else by correlationId); a delivery under its event (messageId); a call or an event under the
 * handling that caused it (causedBy: an rpc-request or a delivery), else under the HTTP request of its
 * requestId, else at the top. Entries are deduplicated by id (the first kept).
 */
export function buildStory(entries: readonly JournalEntry[], id?: string): Story {
  const unique = dedupe(entries);
  const nodes = new Map<string, StoryNode>();
  const requestsByCorrelation = new Map<string, StoryNode>();
  for (const entry of unique) {
    if (entry.kind === "rpc-reply") continue;
    const node: StoryNode = { entry, children: [] };
    nodes.set(entry.id, node);
    if (entry.kind === "rpc-request" && entry.correlationId)
      requestsByCorrelation.set(entry.correlationId, node);
  }
  for (const reply of unique.filter((entry) => entry.kind === "rpc-reply")) {
    const byCause = reply.causedBy === undefined ? undefined : nodes.get(reply.causedBy);
    const request =
      byCause?.entry.kind === "rpc-request"
        ? byCause
        : reply.correlationId === undefined
          ? undefined
          : requestsByCorrelation.get(reply.correlationId);
    if (request && !request.reply) request.reply = reply;
    else nodes.set(reply.id, { entry: reply, children: [] });
  }
  const roots = link(nodes);
  sortTree(roots);
  const http = roots.length === 1 && roots[0]!.entry.kind === "http" ? roots[0] : undefined;
  const start = http
    ? startOf(http.entry)
    : Math.min(...[...nodes.values()].map((node) => startOf(node.entry)));
  const storyId = id ?? unique.find((entry) => entry.requestId)?.requestId ?? unique[0]?.traceId ?? "";
  return { id: storyId, start: Number.isFinite(start) ? start : 0, roots };
}

function dedupe(entries: readonly JournalEntry[]): JournalEntry[] {
  const seen = new Set<string>();
  return entries.filter((entry) => !seen.has(entry.id) && seen.add(entry.id) !== undefined);
}

/** Attaches each node to its parent; returns the nodes that have none (cycles broken at the top). */
function link(nodes: Map<string, StoryNode>): StoryNode[] {
  const parents = new Map<StoryNode, StoryNode>();
  for (const node of nodes.values()) {
    const parent = parentOf(node.entry, nodes);
    if (parent && parent !== node && !descends(parent, node, parents)) parents.set(node, parent);
  }
  const roots: StoryNode[] = [];
  for (const node of nodes.values()) {
    const parent = parents.get(node);
    if (parent) parent.children.push(node);
    else roots.push(node);
  }
  return roots;
}

function parentOf(entry: JournalEntry, nodes: Map<string, StoryNode>): StoryNode | undefined {
  if (entry.kind === "http") return undefined;
  if (entry.kind === "delivery") {
    const event = entry.messageId === undefined ? undefined : nodes.get(entry.messageId);
    if (event?.entry.kind === "event") return event;
  } else if (entry.causedBy !== undefined) {
    const handling = nodes.get(entry.causedBy);
    if (handling?.entry.kind === "rpc-request" || handling?.entry.kind === "delivery") return handling;
  }
  return entry.requestId === undefined ? undefined : nodes.get(`http:${entry.requestId}`);
}

/** Whether `node` is an ancestor of `candidate` already: linking them would close a cycle. */
function descends(candidate: StoryNode, node: StoryNode, parents: Map<StoryNode, StoryNode>): boolean {
  for (let up: StoryNode | undefined = candidate; up; up = parents.get(up)) if (up === node) return true;
  return false;
}

/** Children by start time; an event's deliveries grouped by consumer (groups by first try), tries in order. */
function sortTree(nodes: StoryNode[], deliveries = false): void {
  if (deliveries) sortDeliveries(nodes);
  else nodes.sort((a, b) => startOf(a.entry) - startOf(b.entry));
  for (const node of nodes) sortTree(node.children, node.entry.kind === "event");
}

function sortDeliveries(children: StoryNode[]): void {
  const firstTry = new Map<string, number>();
  for (const child of children) {
    const consumer = consumerOf(child.entry);
    firstTry.set(
      consumer,
      Math.min(firstTry.get(consumer) ?? Number.POSITIVE_INFINITY, startOf(child.entry)),
    );
  }
  children.sort(
    (a, b) =>
      firstTry.get(consumerOf(a.entry))! - firstTry.get(consumerOf(b.entry))! ||
      consumerOf(a.entry).localeCompare(consumerOf(b.entry)) ||
      attemptOf(a.entry) - attemptOf(b.entry) ||
      startOf(a.entry) - startOf(b.entry),
  );
}

/** A delivery's consumer (summary.consumer, else the part of its id after "@"). */
export function consumerOf(entry: JournalEntry): string {
  const consumer = entry.summary?.consumer;
  if (typeof consumer === "string") return consumer;
  const at = entry.id.lastIndexOf("@");
  const hash = entry.id.lastIndexOf("#");
  return at === -1 ? "" : entry.id.slice(at + 1, hash > at ? hash : undefined);
}

export function attemptOf(entry: JournalEntry): number {
  const attempt = entry.summary?.attempt;
  return typeof attempt === "number" ? attempt : 0;
}

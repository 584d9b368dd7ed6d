import type { Channel, ChannelModel, Options } from "amqplib";
import type { Logger } from "pino";
import type { TSchema } from "typebox";

/** What a bus lends its journal. */
export interface JournalHost {
  service: string;
  log: Logger;
  /** The channel entries go out on, while the bus is connected. */
  channel(): Channel | undefined;
}

/** What a journal entry records: a message the bus sent, a consumer's handling of one, or an HTTP request. */
export const JOURNAL_KINDS = ["http", "rpc-request", "rpc-reply", "event", "delivery"] as const;
export type JournalKind = (typeof JOURNAL_KINDS)[number];

export function isJournalKind(value: unknown): value is JournalKind {
  return typeof value === "string" && (JOURNAL_KINDS as readonly string[]).includes(value);
}

/** How a consumer's handling of an event ended. */
export const DELIVERY_OUTCOMES = ["acked", "duplicate", "retried", "dead-lettered", "requeued"] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/**
 * One entry handed to the journal. Ids make the story of a request a tree: an RPC request or an event names
 * the handling that caused it (`causedBy`: an RPC request's id, or a delivery's), a reply its request
 * (`correlationId`), a delivery its event (`messageId`).
 */
export interface JournalNote {
  kind: JournalKind;
  /**
   * Unique in the journal: a message's messageId (rpc-request, rpc-reply, event), `http:<requestId>`, or
   * `<event messageId>@<consumer>#<attempt>` for a delivery (deliveryId).
   */
  id: string;
  /** The RPC or event name; an HTTP request's `METHOD route`. */
  name: string;
  /** When it happened (ms): sent, handled, or (http) answered. */
  at: number;
  requestId: string | undefined;
  traceparent?: string | undefined;
  causedBy?: string | undefined;
  correlationId?: string | undefined;
  /** An event's id (event, delivery). */
  messageId?: string | undefined;
  /** rpc-request, rpc-reply, event: the message as sent, for a replay. */
  message?: { properties: Options.Publish; body: Buffer };
  /** The schema the message's value matches, and the value: the journal replaces its personal fields. */
  schema?: TSchema;
  value?: unknown;
  /** http and delivery: what happened (a JSON object). */
  summary?: Record<string, unknown>;
}

/**
 * The journal id of one handling of an event by one consumer: `<messageId>@<consumer>#<attempt>`, and for a
 * handling that is not the attempt's first, what makes it another one (`round`): a re-drive from the
 * dead-letter queue, a replay from the journal, or a redelivery after a crash, which start their attempts
 * over or repeat one.
 */
export const deliveryId = (messageId: string, consumer: string, attempt: number, round?: string): string =>
  `${messageId}@${consumer}#${attempt}${round === undefined ? "" : `+${round}`}`;

/**
 * A record of the bus's traffic, fed by the bus: `@fundraise/journal` implements it (`journalWriter()`),
 * the bus only calls it, so the bus does not depend on the journal. Every entry is handed over explicitly:
 * RPC requests and replies (no binding may see them: it would make every call routable), events once the
 * broker confirmed them, and each consumer's handling of an event.
 */
export interface BusJournal {
  /** Declares the journal's exchanges, queues and bindings on channels of its own; runs on every (re)connect. */
  declare(connection: ChannelModel): Promise<void>;
  /** Keeps an entry (in a batch, sent shortly). Never throws. */
  record(note: JournalNote): void;
  /** Sends what waits; the bus calls it before closing its channels. */
  flush(): void;
}

/** `AmqpBusOptions.journal`: makes the bus's journal once the bus exists. */
export type JournalFactory = (host: JournalHost) => BusJournal;

import { decodeBody, Header, type Headers, numberHeader, stringHeader } from "@fundraise/bus";
import type { Message } from "amqplib";

/** What an operator wants to know about one dead letter, from its headers. */
export interface DeadLetter {
  messageId: string | undefined;
  /** The event's name: the routing key it was first published with. */
  event: string | undefined;
  requestId: string | undefined;
  /** Delivery attempts the consumer made (`x-attempt`); unknown for what the broker dead-lettered. */
  attempts: number | undefined;
  lastError: { message: string | undefined; kind: string | undefined; code: string | undefined };
  /** ms */
  deadLetteredAt: number | undefined;
  /** The queue it failed in, where a re-drive puts it back. */
  originalQueue: string;
  /** Times the DLQ handed it out and got it back (reads by this tool count). */
  deliveryCount: number;
}

interface Death {
  queue: string | undefined;
  reason: string | undefined;
  time: number | undefined;
  routingKey: string | undefined;
}

/** `x-death`, most recent death first, as RabbitMQ keeps it; empty for what the bus dead-lettered. */
function deaths(headers: Headers | undefined): Death[] {
  const raw = headers?.["x-death"];
  if (!Array.isArray(raw)) return [];
  return raw.map((entry: Record<string, unknown>) => {
    const keys = entry["routing-keys"];
    return {
      queue: stringHeader(entry, "queue"),
      reason: stringHeader(entry, "reason"),
      time: amqpTime(entry.time),
      routingKey: Array.isArray(keys) && typeof keys[0] === "string" ? keys[0] : undefined,
    };
  });
}

/** AMQP timestamps are seconds; amqplib decodes a table's as `{ "!": "timestamp", value }`. */
function amqpTime(value: unknown): number | undefined {
  const seconds =
    typeof value === "object" && value !== null && "value" in value
      ? (value as { value: unknown }).value
      : value;
  return typeof seconds === "number" && Number.isFinite(seconds) ? seconds * 1000 : undefined;
}

/**
 * Where a dead letter goes back to. The bus names it (`x-original-queue`); for what the broker dead-lettered
 * (delivery limit), the queue of its latest death: `x-first-death-queue` can be a retry queue the message
 * expired from on its way back. A DLQ is `<queue>.dlq`, so its name is the last resort.
 */
export function originalQueueOf(message: Message, deadLetterQueue: string): string {
  const headers = message.properties.headers;
  return (
    stringHeader(headers, Header.ORIGINAL_QUEUE) ??
    deaths(headers)[0]?.queue ??
    stringHeader(headers, "x-first-death-queue") ??
    deadLetterQueue.replace(/\.dlq$/, "")
  );
}

/** When it was dead-lettered (ms): the bus's header, else the broker's, else when it was published. */
export function deadLetteredAtOf(message: Message): number | undefined {
  const headers = message.properties.headers;
  const timestamp = message.properties.timestamp as unknown;
  return (
    numberHeader(headers, Header.DEAD_LETTERED_AT) ??
    deaths(headers)[0]?.time ??
    (typeof timestamp === "number" ? timestamp * 1000 : undefined)
  );
}

/** The routing key it was first published with: its event's name. */
export function eventOf(message: Message): string | undefined {
  const headers = message.properties.headers;
  return stringHeader(headers, Header.ORIGINAL_ROUTING_KEY) ?? deaths(headers).at(-1)?.routingKey;
}

export function readDeadLetter(message: Message, deadLetterQueue: string): DeadLetter {
  const headers = message.properties.headers;
  const messageId = message.properties.messageId as unknown;
  const brokerReason = deaths(headers)[0]?.reason;
  return {
    messageId: typeof messageId === "string" ? messageId : undefined,
    event: eventOf(message),
    requestId: stringHeader(headers, Header.REQUEST_ID),
    attempts: numberHeader(headers, Header.ATTEMPT),
    lastError: {
      message:
        stringHeader(headers, Header.LAST_ERROR) ??
        (brokerReason === undefined ? undefined : `dead-lettered by the broker: ${brokerReason}`),
      kind: stringHeader(headers, Header.LAST_ERROR_KIND),
      code: stringHeader(headers, Header.LAST_ERROR_CODE),
    },
    deadLetteredAt: deadLetteredAtOf(message),
    originalQueue: originalQueueOf(message, deadLetterQueue),
    deliveryCount: numberHeader(headers, "x-delivery-count") ?? 0,
  };
}

/** The body as the consumer would see it, or what is wrong with it. */
export function payloadOf(message: Message): unknown {
  try {
    return decodeBody(message.content, message.properties.contentType as string | undefined);
  } catch (error) {
    return { undecodable: (error as Error).message, text: message.content.toString("utf8").slice(0, 2000) };
  }
}

export interface RedriveFilter {
  id?: string;
  request?: string;
  /** A substring of the last error, any case. */
  error?: string;
}

/** Every given filter must hold; no filter matches everything. */
export function matchesFilter(letter: DeadLetter, filter: RedriveFilter): boolean {
  if (filter.id !== undefined && letter.messageId !== filter.id) return false;
  if (filter.request !== undefined && letter.requestId !== filter.request) return false;
  if (filter.error !== undefined) {
    const text = letter.lastError.message?.toLowerCase() ?? "";
    if (!text.includes(filter.error.toLowerCase())) return false;
  }
  return true;
}

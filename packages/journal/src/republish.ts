import { randomUUID } from "node:crypto";
import { carriedHeaders, compactHeaders, Exchanges, Header, timeOfId } from "@fundraise/bus";
import type { ChannelModel, ConfirmChannel, Options } from "amqplib";
import { encodeBatch, type JournalEntry } from "./format.ts";
import { rpcEffect } from "./read/catalog.ts";
import { bodyOf, type RepublishTarget } from "./records.ts";
import { JOURNAL_EXCHANGE, LATE_EXCHANGE } from "./topology.ts";

/** On a re-published message: the journal position (`<offset>:<index>`) it was copied from. */
export const REPLAYED_FROM = Header.REPLAYED_FROM;
/** Why an entry with replaced personal values is not sent again: the message would not be the one sent. */
export const PERSONAL_REASON = "personal data was replaced in the journal; the original is not kept";
/** Entries re-published by the CLI are journaled under this service, so a story shows the replay. */
const REPLAY_SERVICE = "replay";
/** As the writer's default: a re-published entry of an older request is also put in the late stream. */
const LATE_AFTER_MS = 2000;

export interface RepublishRules {
  toQueue?: string | undefined;
  includeRpc?: boolean | undefined;
  allowWrites?: boolean | undefined;
  includeReplayed?: boolean | undefined;
}

export type Decision = { target: RepublishTarget } | { action: "skipped" | "refused"; reason: string };

/** Whether an entry records a message that was itself re-published from the journal. */
export function isReplay(entry: JournalEntry): boolean {
  const headers = entry.properties?.headers;
  return headers?.[REPLAYED_FROM] !== undefined || headers?.[Header.REPLAYED_FROM_OFFSET] !== undefined;
}

/**
 * Where an entry may go again, or why not. Safe by default: events only; RPC requests with `includeRpc`,
 * and only reads unless `allowWrites` (a write would change state again); never replies, HTTP summaries or
 * deliveries (records of what happened, not messages); never a body whose personal values were replaced.
 */
export function decide(entry: JournalEntry, rules: RepublishRules): Decision {
  const skip = (reason: string): Decision => ({ action: "skipped", reason });
  if (entry.kind === "http" || entry.kind === "delivery") {
    return skip(`a ${entry.kind} entry records what happened; it is not a message`);
  }
  if (entry.kind === "rpc-reply") return skip("replies are never re-published: nobody waits for them");
  if (!entry.properties || entry.body === undefined) return skip("the journal kept no message for it");
  if (!rules.includeReplayed && isReplay(entry))
    return skip("already a replay (--include-replayed sends it)");
  if (entry.redacted?.some((path) => path !== "(header)")) return skip(PERSONAL_REASON);
  if (entry.kind === "rpc-request") {
    if (!rules.includeRpc) return skip("RPC requests are re-published only with --include-rpc");
    const effect = rpcEffect(entry.name);
    if (effect !== "read" && !rules.allowWrites) {
      const why = effect === "unknown" ? "an RPC this protocol does not know" : "a write RPC";
      return { action: "refused", reason: `${entry.name} is ${why}: re-executed only with --allow-writes` };
    }
  }
  if (rules.toQueue !== undefined) return { target: { queue: rules.toQueue } };
  return {
    target: { exchange: entry.kind === "event" ? Exchanges.EVENTS : Exchanges.RPC, routingKey: entry.name },
  };
}

/** The message to send again: its properties as sent, marked as a replay, without its deadline. */
export function republishedMessage(
  entry: JournalEntry,
  position: string,
  freshIds: boolean,
): { body: Buffer; properties: Options.Publish } {
  const p = entry.properties ?? {};
  const headers = carriedHeaders(p.headers);
  // A replayed request must not be dropped as late nor wait for a reply nobody is listening for.
  delete headers[Header.DEADLINE];
  headers[REPLAYED_FROM] = position;
  headers[Header.REPLAYED_FROM_OFFSET] = Number(position.slice(0, position.indexOf(":")));
  const properties: Options.Publish = { persistent: true, headers: compactHeaders(headers) };
  properties.messageId = freshIds ? randomUUID() : p.messageId;
  for (const key of ["timestamp", "type", "contentType", "correlationId"] as const) {
    if (p[key] !== undefined) properties[key] = p[key] as never;
  }
  return { body: bodyOf(entry) ?? Buffer.alloc(0), properties };
}

/**
 * Publishes on a confirm channel, `mandatory`, one at a time in journal order: a basic.return arrives
 * before the confirm of the message it returns, so a return seen while one publish waits is that one's.
 */
export class Republisher {
  private returned = false;

  private constructor(
    private readonly channel: ConfirmChannel,
    /** The journal exchanges that exist: publishing to a missing one would close the channel. */
    private readonly journals: { main: boolean; late: boolean },
  ) {
    channel.on("return", () => {
      this.returned = true;
    });
  }

  static async open(connection: ChannelModel): Promise<Republisher> {
    const journals = {
      main: await exchangeExists(connection, JOURNAL_EXCHANGE),
      late: await exchangeExists(connection, LATE_EXCHANGE),
    };
    const channel = await connection.createConfirmChannel();
    channel.on("error", () => undefined);
    return new Republisher(channel, journals);
  }

  /** Sends the entry again; "unroutable" when no queue took it. The copy is journaled as a replay. */
  async send(
    entry: JournalEntry,
    position: string,
    target: RepublishTarget,
    freshIds: boolean,
  ): Promise<"republished" | "unroutable"> {
    const { body, properties } = republishedMessage(entry, position, freshIds);
    const [exchange, routingKey] =
      "queue" in target ? ["", target.queue] : [target.exchange, target.routingKey];
    this.returned = false;
    await this.publish(exchange, routingKey, body, { ...properties, mandatory: true });
    if (this.returned) return "unroutable";
    await this.journal(entry, body, properties);
    return "republished";
  }

  close(): Promise<void> {
    return this.channel.close().catch(() => undefined);
  }

  private publish(exchange: string, routingKey: string, body: Buffer, properties: Options.Publish) {
    return new Promise<void>((resolve, reject) => {
      this.channel.publish(exchange, routingKey, body, properties, (error) =>
        error ? reject(error) : resolve(),
      );
    });
  }

  /** A replay is an entry of the request it replays (so its story shows it), marked by its headers. */
  private async journal(entry: JournalEntry, body: Buffer, properties: Options.Publish): Promise<void> {
    const at = Date.now();
    const copy: JournalEntry = {
      id: `${String(properties.messageId ?? entry.id)}~replay@${at}`,
      kind: entry.kind,
      name: entry.name,
      at,
      service: REPLAY_SERVICE,
      properties,
      body,
    };
    for (const key of ["requestId", "traceId", "correlationId", "messageId"] as const) {
      if (entry[key] !== undefined) copy[key] = entry[key];
    }
    if (properties.messageId !== undefined && entry.kind === "event") copy.messageId = properties.messageId;
    const batch = encodeBatch([copy], REPLAY_SERVICE);
    if (this.journals.main) await this.publish(JOURNAL_EXCHANGE, "", batch.body, batch.properties);
    const started = entry.requestId === undefined ? undefined : timeOfId(entry.requestId);
    if (this.journals.late && started !== undefined && at - started > LATE_AFTER_MS) {
      await this.publish(LATE_EXCHANGE, "", batch.body, batch.properties);
    }
  }
}

async function exchangeExists(connection: ChannelModel, exchange: string): Promise<boolean> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    await channel.checkExchange(exchange);
    return true;
  } catch {
    return false;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

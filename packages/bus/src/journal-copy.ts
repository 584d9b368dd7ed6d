import type { Channel, Options } from "amqplib";
import type { Logger } from "pino";
import { Exchanges } from "./topology.ts";

/**
 * Publishes a copy of an RPC request or reply to the journal. The journal is not bound to `rpc` (a binding
 * would make every request routable), so RPC traffic reaches it only this way. A lost copy is not worth
 * failing the call or the reply for.
 */
export function journalCopy(
  log: Logger,
  channel: Channel,
  routingKey: string,
  body: Buffer,
  properties: Options.Publish,
): void {
  try {
    channel.publish(Exchanges.JOURNAL, routingKey, body, properties);
  } catch (error) {
    log.debug({ err: error, routingKey }, "journal copy not published");
  }
}

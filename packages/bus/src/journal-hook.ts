import type { JournalMode } from "@fundraise/protocol";
import type { Channel, Options } from "amqplib";
import type { Logger } from "pino";

/** What a bus lends its journal. */
export interface JournalHost {
  service: string;
  log: Logger;
  /** The channel copies go out on, while the bus is connected. */
  channel(): Channel | undefined;
}

/**
 * A record of the bus's traffic, fed by the bus: `@fundraise/journal` implements it (`journalWriter()`),
 * the bus only calls it, so the bus does not depend on the journal. Events reach the journal through
 * what `declare` binds; RPC requests and replies (which no binding may see: it would make every call
 * routable) are handed over one by one.
 */
export interface BusJournal {
  /** Declares the journal's exchanges, queues and bindings; runs on every (re)connect. */
  declare(channel: Channel): Promise<void>;
  /** A request or reply as published, kept as its descriptor's `journal` mode says. */
  copyAs(mode: JournalMode, routingKey: string, body: Buffer, properties: Options.Publish): void;
  /** Sends what waits; the bus calls it before closing its channels. */
  flush(): void;
}

/** `AmqpBusOptions.journal`: makes the bus's journal once the bus exists. */
export type JournalFactory = (host: JournalHost) => BusJournal;

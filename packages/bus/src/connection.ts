import { type AppError, ErrorCode, errors } from "@fundraise/protocol";
import amqp, { type ChannelModel } from "amqplib";
import type { Logger } from "pino";
import { backoffWithJitter } from "./retry.ts";
import { createWaitingLog, outageReason, redactUrl, type WaitingLog } from "./waiting.ts";

export type ConnectionState = "connecting" | "connected" | "disconnected" | "closed";

export interface ConnectionManagerOptions {
  url: string;
  /** Shown in the broker's connection list (and matched by `rabbitmqctl close_connection`). */
  connectionName: string;
  logger: Logger;
  /** Runs on every new connection before it counts as up; throwing drops the connection and retries. */
  setup: (connection: ChannelModel, generation: number) => Promise<void>;
  /** Runs once per lost connection, synchronously, before any reconnect attempt. */
  onLost: (error: Error | undefined) => void;
  /** Cap of the reconnect backoff (default 5 s). */
  maxBackoffMs?: number;
}

const DEFAULT_HEARTBEAT_SECONDS = 10;
const CONNECT_TIMEOUT_MS = 10_000;

/** Adds a heartbeat to the URL unless it has one: a half-open TCP connection must not look alive forever. */
export function withHeartbeat(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.searchParams.has("heartbeat"))
      parsed.searchParams.set("heartbeat", String(DEFAULT_HEARTBEAT_SECONDS));
    return parsed.toString();
  } catch {
    return url;
  }
}

export { redactUrl };

/** What every part of the bus throws when it cannot reach the broker, or once the bus is closed. */
export function brokerUnavailable(message = "The message broker is not reachable."): AppError {
  return errors.unavailable(ErrorCode.BROKER_UNAVAILABLE, message);
}

interface Waiter {
  resolve: (connection: ChannelModel) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * One broker connection that comes back by itself: reconnects with backoff and jitter, runs `setup` on
 * every new connection (topology, channels, consumers) and reports the loss so callers can fail fast.
 */
export class ConnectionManager {
  private readonly log: Logger;
  private readonly url: string;
  private current: ChannelModel | undefined;
  private currentGeneration = 0;
  private stateValue: ConnectionState = "disconnected";
  private loop: Promise<void> | undefined;
  private waiters = new Set<Waiter>();
  private sleepTimer: NodeJS.Timeout | undefined;
  private wakeSleep: (() => void) | undefined;
  /** While the broker does not answer: one line per burst of attempts, not one per attempt. */
  private readonly waiting: WaitingLog;

  constructor(private readonly options: ConnectionManagerOptions) {
    this.log = options.logger;
    this.url = withHeartbeat(options.url);
    this.waiting = createWaitingLog({ log: this.log, what: "the message broker", url: options.url });
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  get connection(): ChannelModel | undefined {
    return this.stateValue === "connected" ? this.current : undefined;
  }

  /** Increases with every successful connection; lets a role tell a stale channel from a live one. */
  get generation(): number {
    return this.currentGeneration;
  }

  /**
   * Starts connecting; resolves once connected, or rejects after `timeoutMs` (the loop keeps trying).
   * `Infinity`: waits as long as it takes.
   */
  async start(timeoutMs: number): Promise<void> {
    this.ensureLoop();
    await this.waitConnected(timeoutMs);
  }

  /**
   * The live connection, waiting for a reconnect up to `timeoutMs` (`Infinity`: no limit); `unavailable`
   * after that.
   */
  waitConnected(timeoutMs: number): Promise<ChannelModel> {
    const live = this.connection;
    if (live) return Promise.resolve(live);
    if (this.stateValue === "closed") return Promise.reject(brokerUnavailable("The message bus is closed."));
    if (timeoutMs <= 0) return Promise.reject(brokerUnavailable());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined };
      // setTimeout takes at most 2^31-1 ms (longer fires at once): no timer at all for no limit.
      if (timeoutMs <= 2_147_483_647) {
        waiter.timer = setTimeout(() => {
          this.waiters.delete(waiter);
          reject(brokerUnavailable());
        }, timeoutMs);
      }
      this.waiters.add(waiter);
    });
  }

  async close(): Promise<void> {
    if (this.stateValue === "closed") return;
    this.stateValue = "closed";
    this.wakeSleep?.();
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(brokerUnavailable("The message bus is closed."));
    }
    this.waiters.clear();
    const connection = this.current;
    this.current = undefined;
    if (connection) {
      try {
        await connection.close();
      } catch (error) {
        this.log.debug({ err: error }, "broker connection was already closed");
      }
    }
    await this.loop;
  }

  private ensureLoop(): void {
    if (this.loop || this.stateValue === "closed") return;
    this.loop = this.connectLoop().finally(() => {
      this.loop = undefined;
      // A connection lost while the loop was winding down still deserves a reconnect.
      if (this.stateValue === "disconnected") this.ensureLoop();
    });
  }

  private async connectLoop(): Promise<void> {
    let attempt = 0;
    while (this.stateValue !== "closed") {
      this.stateValue = "connecting";
      let connection: ChannelModel | undefined;
      let lostDuringSetup = false;
      try {
        connection = await amqp.connect(this.url, {
          clientProperties: { connection_name: this.options.connectionName },
          // A black-holed host would otherwise stall the loop for the OS's TCP timeout.
          timeout: CONNECT_TIMEOUT_MS,
          // RPC frames are small and latency-bound: Nagle's algorithm meeting delayed ACKs would hold
          // each one back by tens of milliseconds.
          noDelay: true,
        });
        const candidate = connection;
        // amqplib follows an 'error' with 'close' (below), which logs the loss once.
        candidate.on("error", (error: Error) => {
          this.log.debug({ err: error }, "broker connection error");
        });
        candidate.on("close", (error?: Error) => {
          if (this.current === candidate) this.lost(candidate, error);
          else lostDuringSetup = true;
        });
        candidate.on("blocked", (reason: string) => {
          this.log.warn({ reason }, "broker blocked publishing (resource alarm)");
        });
        candidate.on("unblocked", () => this.log.info("broker unblocked publishing"));
        const generation = this.currentGeneration + 1;
        await this.options.setup(candidate, generation);
        if (lostDuringSetup) throw new Error("connection closed during setup");
        if ((this.stateValue as ConnectionState) === "closed") {
          await candidate.close().catch(() => undefined);
          return;
        }
        this.current = candidate;
        this.currentGeneration = generation;
        this.stateValue = "connected";
        // After failed attempts: "connected to the message broker again after N failed attempts, X s".
        if (!this.waiting.connected())
          this.log.info({ url: redactUrl(this.options.url) }, "connected to the message broker");
        for (const waiter of this.waiters) {
          clearTimeout(waiter.timer);
          waiter.resolve(candidate);
        }
        this.waiters.clear();
        return;
      } catch (error) {
        if (connection) await connection.close().catch(() => undefined);
        if ((this.stateValue as ConnectionState) === "closed") return;
        this.stateValue = "disconnected";
        const delay = backoffWithJitter(attempt, 100, this.options.maxBackoffMs ?? 5000);
        attempt++;
        this.waiting.failed(error);
        await this.sleep(delay);
      }
    }
  }

  private lost(connection: ChannelModel, error: Error | undefined): void {
    if (this.current !== connection) return;
    this.current = undefined;
    if (this.stateValue === "closed") return;
    this.stateValue = "disconnected";
    // The broker's own words (a restart, a forced close, a missed heartbeat) say enough; a stack would not.
    const reason = error ? (outageReason(error) ?? error.message) : "closed by the broker";
    this.log.warn(
      { url: redactUrl(this.options.url), reason },
      `lost the message broker connection (${reason}); reconnecting`,
    );
    try {
      this.options.onLost(error);
    } finally {
      this.ensureLoop();
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wakeSleep = () => {
        clearTimeout(this.sleepTimer);
        resolve();
      };
      this.sleepTimer = setTimeout(resolve, ms);
    });
  }
}

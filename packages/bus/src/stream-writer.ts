import {
  type AppError,
  ErrorCode,
  isAppError,
  type StreamDescriptor,
  type StreamEnd,
  type StreamOpenOf,
  type StreamRef,
  toAppError,
} from "@fundraise/protocol";
import type { Bus, CallOptions } from "./bus.ts";
import { abortStream, callInstance, streamInterrupted } from "./stream.ts";

export interface StreamWriterOptions<S extends StreamDescriptor> {
  /** The open request, sent with the first part. */
  open: StreamOpenOf<S>;
  /** Parts sent and not yet answered, at most (default 8). */
  window?: number;
  /** The request id (and deadline) the calls carry. */
  context?: CallOptions;
  /**
   * How long parts may wait for an answer before the writer asks the instance whether the stream is
   * still open (default 1000 ms): an instance that died took its queue and the parts in it along, and
   * their answers would otherwise only time out.
   */
  probeMs?: number;
}

/**
 * The sending end of a stream (stream.ts). The first write opens it on whichever instance answers; parts
 * then go to that instance in order, at most `window` unanswered. A part is answered once the receiver
 * took it, so a slow receiver slows the writer: after a write, `ready()` says when to write again. The
 * first failure ends the stream: later writes are dropped, `ready()` and `end()` reject with it. Parts
 * that wait long for their answer make the writer ask whether the stream is still open: a dead instance
 * fails it at once (STREAM_INTERRUPTED) instead of at the parts' deadline.
 */
export class StreamWriter<S extends StreamDescriptor> {
  private ref: StreamRef | undefined;
  private opening: Promise<void> | undefined;
  private readonly queued: { entry: string; bytes: Uint8Array }[] = [];
  private sent = 0;
  private unanswered = 0;
  private failure: AppError | undefined;
  private aborted = false;
  private changed: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly window: number;
  private readonly probeMs: number;
  /** When the last answer came (or the first part of a run went out). */
  private heardAt = 0;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly bus: Bus,
    private readonly stream: S,
    private readonly options: StreamWriterOptions<S>,
  ) {
    this.window = options.window ?? 8;
    this.probeMs = options.probeMs ?? 1000;
  }

  /** The first failure, if any. */
  get failed(): AppError | undefined {
    return this.failure;
  }

  /** Opens the stream now, before the first part is ready (a write opens it otherwise). */
  start(): void {
    if (!this.ref && !this.failure && !this.aborted) this.opening ??= this.open();
  }

  /** Queues a part of `entry` (at most the stream's `partBytes`); it is sent as soon as the window allows. */
  write(entry: string, bytes: Uint8Array): void {
    if (this.failure || this.aborted) return;
    if (bytes.byteLength > this.stream.partBytes)
      throw new Error(`a part is at most ${this.stream.partBytes} bytes`);
    this.queued.push({ entry, bytes });
    this.pump();
  }

  /** Undefined while more parts are welcome; else resolves when they are, or rejects with the failure. */
  ready(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    if (this.queued.length + this.unanswered < this.window) return undefined;
    return this.until(() => this.queued.length + this.unanswered < this.window);
  }

  /** Waits until every part is answered: the stream, for whoever finishes it; null when nothing was written. */
  async end(): Promise<StreamEnd | null> {
    await this.until(() => this.queued.length === 0 && this.unanswered === 0 && !this.opening);
    if (!this.ref) return null;
    return { ...this.ref, parts: this.sent };
  }

  /** Drops what is not sent and tells the receiver to drop the stream. Never throws. */
  async abort(): Promise<void> {
    this.aborted = true;
    this.queued.length = 0;
    this.watch();
    await this.opening;
    if (this.ref) await abortStream(this.bus, this.stream, this.ref, this.context());
  }

  private pump(): void {
    if (this.failure || this.aborted) return;
    if (!this.ref) {
      this.opening ??= this.open();
      return;
    }
    const ref = this.ref;
    while (this.queued.length > 0 && this.unanswered < this.window && !this.failure) {
      const { entry, bytes } = this.queued.shift() as { entry: string; bytes: Uint8Array };
      const part = { streamId: ref.streamId, seq: this.sent++, entry, bytes };
      if (this.unanswered === 0) this.heardAt = Date.now();
      this.unanswered++;
      callInstance(this.bus, this.stream.part, ref, part, this.context()).then(
        () => this.answered(),
        (error: unknown) => this.answered(error),
      );
    }
    this.watch();
    this.notify();
  }

  /** Probes the instance while parts wait for answers (see `probeMs`); stops when none waits. */
  private watch(): void {
    if (this.unanswered > 0 && !this.failure && !this.aborted) {
      this.probe ??= setInterval(() => void this.check(), this.probeMs);
      this.probe.unref();
    } else {
      clearInterval(this.probe);
      this.probe = undefined;
    }
  }

  private async check(): Promise<void> {
    const ref = this.ref;
    if (!ref || this.probing || this.unanswered === 0 || Date.now() - this.heardAt < this.probeMs) return;
    this.probing = true;
    try {
      const open = await callInstance(
        this.bus,
        this.stream.alive,
        ref,
        { streamId: ref.streamId },
        this.context(),
      );
      if (!open) this.fail(streamInterrupted(this.stream.service));
    } catch (error) {
      // Unroutable: the instance is gone. Anything else (a slow answer) says nothing about the stream.
      if (isAppError(error) && error.code === ErrorCode.STREAM_INTERRUPTED) this.fail(error);
    } finally {
      this.probing = false;
    }
  }

  private async open(): Promise<void> {
    try {
      this.ref = await this.bus.call(this.stream.open, this.options.open, this.context());
    } catch (error) {
      this.fail(error);
    } finally {
      this.opening = undefined;
    }
    this.pump(); // unless it failed or was aborted meanwhile (then abort() tells the receiver)
    this.notify();
  }

  private answered(error?: unknown): void {
    this.unanswered--;
    this.heardAt = Date.now();
    if (error !== undefined) this.fail(error);
    else this.pump();
    this.notify();
  }

  private fail(error: unknown): void {
    this.failure ??= toAppError(error);
    this.queued.length = 0;
    this.watch();
    this.notify();
  }

  private context(): CallOptions {
    return this.options.context ?? {};
  }

  /** Waits for `done` to hold; rejects with the stream's failure first. */
  private async until(done: () => boolean): Promise<void> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (done()) return;
      if (!this.changed) {
        let resolve = () => {};
        const promise = new Promise<void>((r) => {
          resolve = r;
        });
        this.changed = { promise, resolve };
      }
      await this.changed.promise;
    }
  }

  private notify(): void {
    const changed = this.changed;
    this.changed = undefined;
    changed?.resolve();
  }
}

import { randomBytes } from "node:crypto";
import {
  type AppError,
  ErrorCode,
  errors,
  type RpcDescriptor,
  type StreamDescriptor,
  type StreamFinishOf,
  type StreamOpenOf,
  type StreamResultOf,
} from "@fundraise/protocol";
import type { Bus, MessageContext, RpcHandler } from "./bus.ts";
import { instanceRpc, streamInterrupted } from "./stream.ts";

/** What a service does with one stream it receives. */
export interface StreamSink<F, R> {
  /**
   * The next part, in order. Resolves once the part is taken (the writer's next parts wait for that);
   * a rejection fails the writer.
   */
  part(entry: string, bytes: Uint8Array): Promise<void>;
  /** Every part arrived: finish the work and answer. */
  finish(request: F, ctx: MessageContext): Promise<R>;
  /** The stream ends without a finish (its writer aborted it, it was idle too long, the service stops). */
  abort(reason: AppError): void;
}

export interface StreamServerOptions<S extends StreamDescriptor> {
  /** A stream that receives no part for this long is dropped (its writer stopped, or was killed). */
  idleMs: number;
  /** Parts taken in ahead of one that has not arrived yet, at most (default 64). */
  maxAhead?: number;
  /** A new stream's sink; throw to refuse the stream. */
  open(
    request: StreamOpenOf<S>,
    ctx: MessageContext,
    streamId: string,
  ): StreamSink<StreamFinishOf<S>, StreamResultOf<S>>;
}

export interface StreamServer {
  /** This instance's id: its streams' parts come to it alone. */
  readonly instance: string;
  /** Streams open now (finishing ones excluded). */
  readonly open: number;
  /** Parts received since the start, on every stream. */
  readonly partsReceived: number;
  /** Drops every open stream: the service is stopping. */
  close(): void;
}

type Sink = StreamSink<unknown, unknown>;

/** One open stream: its parts in sequence order, whatever order they come in, and its idle timer. */
class OpenStream {
  private next = 0;
  private readonly ahead = new Map<
    number,
    { entry: string; bytes: Uint8Array; settle: (taken: Promise<void>) => void }
  >();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly sink: Sink,
    idleMs: number,
    onIdle: () => void,
  ) {
    this.timer = setTimeout(onIdle, idleMs);
    this.timer.unref();
  }

  /** Takes part `seq`: delivered when every part before it was; resolves once the sink took it. */
  accept(seq: number, entry: string, bytes: Uint8Array, maxAhead: number): Promise<void> {
    this.timer.refresh();
    if (seq < this.next || seq >= this.next + maxAhead || this.ahead.has(seq)) {
      throw errors.validation(
        ErrorCode.VALIDATION_FAILED,
        `Part ${seq} is out of sequence (next: ${this.next}).`,
      );
    }
    if (seq > this.next) {
      return new Promise((resolve, reject) => {
        this.ahead.set(seq, { entry, bytes, settle: (taken) => taken.then(resolve, reject) });
      });
    }
    const taken = this.deliver(entry, bytes);
    for (let waiting = this.ahead.get(this.next); waiting; waiting = this.ahead.get(this.next)) {
      this.ahead.delete(this.next);
      waiting.settle(this.deliver(waiting.entry, waiting.bytes));
    }
    return taken;
  }

  /** Whether exactly `parts` parts arrived, none missing. */
  complete(parts: number): boolean {
    return this.next === parts && this.ahead.size === 0;
  }

  get received(): number {
    return this.next;
  }

  /** Stops the timer; with a reason, aborts the sink and fails the parts still waiting for an earlier one. */
  close(reason?: AppError): void {
    clearTimeout(this.timer);
    if (!reason) return;
    for (const waiting of this.ahead.values()) waiting.settle(Promise.reject(reason));
    this.ahead.clear();
    this.sink.abort(reason);
  }

  private deliver(entry: string, bytes: Uint8Array): Promise<void> {
    this.next++;
    return this.sink.part(entry, bytes);
  }
}

/**
 * The receiving end of a stream (stream.ts): serves `open` on the service's shared queue and the
 * stream's part, finish, abort and alive calls on this instance's own. Parts are handed to the stream's
 * sink in sequence order; a part's answer waits until the sink took it. A finish closes the stream
 * whatever its outcome; a stream that receives no part for `idleMs` is aborted, so an abandoned writer
 * leaves nothing behind.
 */
export async function serveStream<S extends StreamDescriptor>(
  bus: Bus,
  stream: S,
  options: StreamServerOptions<S>,
): Promise<StreamServer> {
  const instance = randomBytes(8).toString("hex");
  const streams = new Map<string, OpenStream>();
  const maxAhead = options.maxAhead ?? 64;
  let partsReceived = 0;
  const interrupted = () => streamInterrupted(stream.service);
  const take = (streamId: string) => {
    const open = streams.get(streamId);
    streams.delete(streamId);
    open?.close();
    return open;
  };
  const serve = <D extends RpcDescriptor>(descriptor: D, handler: RpcHandler<D>) =>
    bus.serve(descriptor, handler);

  await serve(instanceRpc(stream.part, instance), async ({ streamId, seq, entry, bytes }) => {
    const open = streams.get(streamId);
    if (!open) throw interrupted();
    partsReceived++;
    if (bytes.byteLength > stream.partBytes) {
      take(streamId)?.close(interrupted());
      throw errors.validation(ErrorCode.VALIDATION_FAILED, `A part is at most ${stream.partBytes} bytes.`);
    }
    await open.accept(seq, entry, bytes, maxAhead);
    return null;
  });
  await serve(instanceRpc(stream.finish, instance), async ({ streamId, parts, request }, ctx) => {
    const open = take(streamId);
    if (!open) throw interrupted();
    if (!open.complete(parts)) {
      const missing = errors.validation(
        ErrorCode.VALIDATION_FAILED,
        `The stream has ${open.received} parts in sequence, not the ${parts} it was sent.`,
      );
      open.close(missing);
      throw missing;
    }
    return (await open.sink.finish(request, ctx)) as StreamResultOf<S>;
  });
  await serve(instanceRpc(stream.abort, instance), async ({ streamId }) => {
    const open = take(streamId);
    open?.close(interrupted());
    return open !== undefined;
  });
  await serve(instanceRpc(stream.alive, instance), async ({ streamId }) => streams.has(streamId));
  // Last: no stream is opened here before its parts can arrive.
  await serve(stream.open, async (request, ctx) => {
    const streamId = randomBytes(16).toString("hex");
    const sink = options.open(request as StreamOpenOf<S>, ctx, streamId) as Sink;
    streams.set(
      streamId,
      new OpenStream(sink, options.idleMs, () => {
        ctx.log.info({ streamId, idleMs: options.idleMs }, "stream dropped: no part in time");
        take(streamId)?.close(interrupted());
      }),
    );
    return { streamId, instance };
  });

  return {
    instance,
    get open() {
      return streams.size;
    },
    get partsReceived() {
      return partsReceived;
    },
    close() {
      const stopping = errors.unavailable(
        ErrorCode.SERVICE_UNAVAILABLE,
        `The ${stream.service} service is stopping.`,
      );
      for (const streamId of [...streams.keys()]) take(streamId)?.close(stopping);
    },
  };
}

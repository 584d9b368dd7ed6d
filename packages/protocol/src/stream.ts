import Type, { type Static, type TBoolean, type TNull, type TObject, type TSchema } from "typebox";
import { Bytes } from "./common.ts";
import { defineRpc, type RpcDescriptor, type ServiceName } from "./message.ts";

/**
 * A stream of bytes over RPC (packages/bus `StreamWriter`, `serveStream`): opened on any instance of the
 * service, after which its parts, its finish, its abort (and a writer's "alive?") go to that instance
 * alone, on a queue of its own. Parts are numbered bytes (CBOR on the bus), each at most `partBytes`;
 * the journal keeps a part without its bytes (their length only): the content ends where the stream
 * puts it (IPFS, under its CID), and a part alone cannot be replayed into anything.
 */
const StreamId = Type.String({ pattern: "^[0-9a-f]{32}$" });

/** Where a stream lives: its id, and the instance that holds it. */
export const StreamRef = Type.Object({
  streamId: StreamId,
  instance: Type.String({
    pattern: "^[0-9a-f]{16}$",
    description: "the instance's own queue takes the parts",
  }),
});
export type StreamRef = Static<typeof StreamRef>;

/** A stream whose parts were all sent and answered: what its writer hands to whoever finishes it. */
export const StreamEnd = Type.Object({
  streamId: StreamId,
  instance: StreamRef.properties.instance,
  parts: Type.Integer({ minimum: 0, description: "how many parts were sent" }),
});
export type StreamEnd = Static<typeof StreamEnd>;

export const StreamPart = Type.Object({
  streamId: StreamId,
  seq: Type.Integer({ minimum: 0 }),
  /** Which of the stream's entries (the files of an upload) the bytes belong to. */
  entry: Type.String({ minLength: 1, maxLength: 64 }),
  bytes: Bytes,
});

const StreamAbort = Type.Object({ streamId: StreamId });

function finishRequest<F extends TSchema>(request: F) {
  return Type.Object({ streamId: StreamId, parts: StreamEnd.properties.parts, request });
}

export interface StreamDescriptor<
  O extends TSchema = TSchema,
  F extends TSchema = TSchema,
  R extends TSchema = TSchema,
> {
  readonly service: ServiceName;
  /** Any instance: answers where the stream lives. */
  readonly open: RpcDescriptor<O, typeof StreamRef>;
  /** The holding instance: a part; answered once the receiver took it (backpressure). */
  readonly part: RpcDescriptor<typeof StreamPart, TNull>;
  /** The holding instance: every part arrived; the work is finished and answered. */
  readonly finish: RpcDescriptor<ReturnType<typeof finishRequest<F>>, R>;
  /** The holding instance: drop the stream; true when it was open. */
  readonly abort: RpcDescriptor<typeof StreamAbort, TBoolean>;
  /** The holding instance: whether the stream is open there (a writer whose parts wait asks). */
  readonly alive: RpcDescriptor<typeof StreamAbort, TBoolean>;
  /** The largest part, in bytes. */
  readonly partBytes: number;
}

export type StreamOpenOf<S extends StreamDescriptor> = Static<S["open"]["request"]>;
export type StreamFinishOf<S extends StreamDescriptor> = Static<S["finish"]["request"]>["request"];
export type StreamResultOf<S extends StreamDescriptor> = Static<S["finish"]["response"]>;

/** `<name>.open`, `.part`, `.finish`, `.abort` of one stream protocol. */
export function defineStream<O extends TObject, F extends TSchema, R extends TSchema>(
  name: `${ServiceName}.${string}`,
  shape: {
    open: O;
    finish: { request: F; response: R; timeoutMs: number };
    partBytes: number;
    /** How long a part may wait for the receiver to take it. */
    partTimeoutMs: number;
  },
): StreamDescriptor<O, F, R> {
  // Each open picks the instance that holds its stream: opens are never batched, so uploads spread.
  const open = defineRpc(`${name}.open`, { request: shape.open, response: StreamRef, batched: false });
  return {
    service: open.service,
    open,
    part: defineRpc(`${name}.part`, {
      request: StreamPart,
      response: Type.Null(),
      timeoutMs: shape.partTimeoutMs,
      journal: "without-bytes",
    }),
    finish: defineRpc(`${name}.finish`, {
      request: finishRequest(shape.finish.request),
      response: shape.finish.response,
      timeoutMs: shape.finish.timeoutMs,
    }),
    abort: defineRpc(`${name}.abort`, { request: StreamAbort, response: Type.Boolean() }),
    alive: defineRpc(`${name}.alive`, { request: StreamAbort, response: Type.Boolean(), timeoutMs: 5000 }),
    partBytes: shape.partBytes,
  };
}

import {
  type AppError,
  ErrorCode,
  errors,
  isAppError,
  type RequestOf,
  type ResponseOf,
  type RpcDescriptor,
  type ServiceName,
  type StreamDescriptor,
  type StreamEnd,
  type StreamFinishOf,
  type StreamRef,
  type StreamResultOf,
} from "@fundraise/protocol";
import type { Bus, CallOptions } from "./bus.ts";

/**
 * Streams on the bus's RPC (protocol `defineStream`): `StreamWriter` sends, `serveStream` receives. The
 * parts of a stream must all reach the instance that opened it, so each instance serves the stream's
 * part, finish and abort calls under names of its own (`instanceRpc`), on a queue of its own
 * (`<service>.<instance>.rpc`, non-durable and auto-deleted like every RPC queue): when the instance
 * stops, its queue goes, and a call to it comes back unroutable at once.
 */

const INSTANCE = /^[0-9a-f]{16}$/;

/** `descriptor` as answered by one instance only: its own name (routing key) and its own queue. */
export function instanceRpc<D extends RpcDescriptor>(descriptor: D, instance: string): D {
  if (!INSTANCE.test(instance)) throw new Error(`not an instance id: ${instance}`);
  return {
    ...descriptor,
    name: `${descriptor.name}.${instance}`,
    // The bus names the queue after the service (`<service>.rpc`): one queue per instance.
    service: `${descriptor.service}.${instance}` as ServiceName,
  };
}

/** The instance that held a stream stopped, or dropped the stream (abandoned, expired, ended). */
export function streamInterrupted(service: string, cause?: unknown): AppError {
  return errors.unavailable(
    ErrorCode.STREAM_INTERRUPTED,
    `The ${service} service stopped receiving this upload; send it again.`,
    { cause },
  );
}

/** Calls `descriptor` on the instance that holds the stream; an instance that is gone is "interrupted". */
export async function callInstance<D extends RpcDescriptor>(
  bus: Bus,
  descriptor: D,
  ref: StreamRef,
  request: RequestOf<D>,
  options?: CallOptions,
): Promise<ResponseOf<D>> {
  try {
    return await bus.call(instanceRpc(descriptor, ref.instance), request, options);
  } catch (error) {
    if (isAppError(error) && error.code === ErrorCode.SERVICE_UNAVAILABLE) {
      throw streamInterrupted(descriptor.service, error);
    }
    throw error;
  }
}

/** Finishes a stream whose parts were all sent (`StreamWriter.end`): the receiver's answer. */
export function finishStream<S extends StreamDescriptor>(
  bus: Bus,
  stream: S,
  end: StreamEnd,
  request: StreamFinishOf<S>,
  options?: CallOptions,
): Promise<StreamResultOf<S>> {
  const finish = { streamId: end.streamId, parts: end.parts, request } as RequestOf<S["finish"]>;
  return callInstance(bus, stream.finish, end, finish, options) as Promise<StreamResultOf<S>>;
}

/** Tells the receiver to drop the stream; true when it was open there. Never throws. */
export async function abortStream(
  bus: Bus,
  stream: StreamDescriptor,
  ref: StreamRef,
  options?: CallOptions,
): Promise<boolean> {
  try {
    return await callInstance(bus, stream.abort, ref, { streamId: ref.streamId }, options);
  } catch {
    return false; // the instance is gone (and the stream with it) or cannot be reached: it expires there
  }
}

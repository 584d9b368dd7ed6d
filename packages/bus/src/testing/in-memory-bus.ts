import { randomUUID } from "node:crypto";
import {
  ErrorCode,
  type EventDescriptor,
  errors,
  type RpcDescriptor,
  toAppError,
  validatorOf,
} from "@fundraise/protocol";
import pino, { type Logger } from "pino";
import { type Bus, type EventHandler, type MessageContext, type RpcHandler, WithMessage } from "../bus.ts";
import { successReply } from "../headers.ts";
import type { JournalNote } from "../journal-hook.ts";
import { answerOnce, type RpcAnswers } from "../rpc-answers.ts";
import { testMessageContext } from "./message-context.ts";

/**
 * The Bus contract without a broker, for unit tests: same validation, same error kinds, no network.
 * An unserved descriptor answers `unavailable`, as a service that is not running does on RabbitMQ.
 */
export function createInMemoryBus(options: { logger?: Logger } = {}): Bus & {
  /** Events published so far, oldest first. */
  published: { name: string; payload: unknown }[];
  /** Entries given to `note`, oldest first. */
  notes: JournalNote[];
} {
  const log = options.logger ?? pino({ level: "silent" });
  const handlers = new Map<string, RpcHandler<RpcDescriptor>>();
  const subscribers = new Map<string, EventHandler<EventDescriptor>[]>();
  const published: { name: string; payload: unknown }[] = [];
  const notes: JournalNote[] = [];
  let answers: RpcAnswers | undefined;

  const context = (name: string, requestId: string = randomUUID(), deadline?: number): MessageContext =>
    testMessageContext({ requestId, deadline, log: log.child({ requestId, message: name }) });

  const bus: ReturnType<typeof createInMemoryBus> = {
    published,
    notes,
    note(note) {
      notes.push(note);
    },
    async call(descriptor, request, callOptions) {
      return (await bus.callWithMessage(descriptor, request, callOptions)).data;
    },
    async callWithMessage(descriptor, request, callOptions = {}) {
      const handler = handlers.get(descriptor.name);
      if (!handler) {
        throw errors.unavailable(
          ErrorCode.SERVICE_UNAVAILABLE,
          `The ${descriptor.service} service is not available.`,
        );
      }
      validatorOf(descriptor.request).assert(request, `${descriptor.name} request`);
      const now = Date.now();
      let deadline = now + (callOptions.timeoutMs ?? descriptor.timeoutMs ?? 5000);
      if (callOptions.deadline !== undefined) deadline = Math.min(deadline, callOptions.deadline);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              errors.timeout(
                ErrorCode.RPC_TIMEOUT,
                `The ${descriptor.service} service did not answer in time.`,
              ),
            ),
          Math.max(0, deadline - now),
        );
      });
      try {
        const ctx = context(descriptor.name, callOptions.requestId, deadline);
        // A keyed call is answered once, as on the broker, when the test gave the bus kept answers.
        const { envelope } = await answerOnce(
          descriptor.answerKept ? answers : undefined,
          callOptions.idempotency,
          ctx.log,
          async () => {
            // A structured clone stands in for serialization: handlers never share objects with callers.
            const answer = await Promise.race([handler(structuredClone(request), ctx), timeout]);
            const [response, message] =
              answer instanceof WithMessage ? [answer.data, answer.message] : [answer, null];
            const data = validatorOf(descriptor.response).assert(
              structuredClone(response),
              `${descriptor.name} response`,
            );
            return successReply(data, message);
          },
        );
        return { data: structuredClone(envelope.data), message: envelope.message } as never;
      } catch (error) {
        throw toAppError(error);
      } finally {
        clearTimeout(timer);
      }
    },
    async serve(descriptor, handler) {
      handlers.set(descriptor.name, handler as unknown as RpcHandler<RpcDescriptor>);
    },
    keepAnswers(kept) {
      answers = kept;
    },
    async publish(descriptor, payload, publishOptions = {}) {
      validatorOf(descriptor.payload).assert(payload, `${descriptor.name} event`);
      published.push({ name: descriptor.name, payload: structuredClone(payload) });
      for (const handler of subscribers.get(descriptor.name) ?? []) {
        await handler(structuredClone(payload), context(descriptor.name, publishOptions.requestId));
      }
    },
    async subscribe(_consumer, descriptor, handler) {
      const list = subscribers.get(descriptor.name) ?? [];
      list.push(handler as unknown as EventHandler<EventDescriptor>);
      subscribers.set(descriptor.name, list);
    },
    isConnected: () => true,
    async close() {
      handlers.clear();
      subscribers.clear();
    },
  };
  return bus;
}

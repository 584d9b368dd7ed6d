import { randomUUID } from "node:crypto";
import pino from "pino";
import type { MessageContext } from "../bus.ts";

/**
 * The context the bus hands a handler for a first delivery (fresh ids, no deadline, a silent logger unless
 * given one), for tests that call a handler directly, e.g. to deliver the same message twice.
 */
export function testMessageContext(overrides: Partial<MessageContext> = {}): MessageContext {
  const messageId = overrides.messageId ?? randomUUID();
  return {
    requestId: randomUUID(),
    messageId,
    causedBy: messageId,
    deadline: undefined,
    traceparent: undefined,
    attempt: 1,
    log: pino({ level: "silent" }),
    ...overrides,
  };
}

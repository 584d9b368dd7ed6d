import { defineEvent, defineRpc } from "@fundraise/protocol";
import pino, { type Logger } from "pino";
import Type from "typebox";

/** Silent unless LOG_LEVEL is set (e.g. LOG_LEVEL=debug pnpm --filter @fundraise/bus test). */
export function testLogger(): Logger {
  return pino({ level: process.env.LOG_LEVEL ?? "silent" });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What `promise` rejects with; throws when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** Descriptors used across the integration tests; `users.*` so they route to the `users.rpc` queue. */
export const TestRpc = {
  echo: defineRpc("users.test.echo", {
    request: Type.Object({ text: Type.String({ maxLength: 100 }), delayMs: Type.Optional(Type.Integer()) }),
    response: Type.Object({ text: Type.String(), requestId: Type.String() }),
  }),
  fail: defineRpc("users.test.fail", {
    request: Type.Object({ how: Type.String() }),
    response: Type.Object({ ok: Type.Boolean() }),
  }),
  context: defineRpc("users.test.context", {
    request: Type.Object({}),
    response: Type.Object({
      deadline: Type.Union([Type.Number(), Type.Null()]),
      requestId: Type.String(),
      traceparent: Type.Union([Type.String(), Type.Null()]),
      attempt: Type.Integer(),
    }),
  }),
  slow: defineRpc("users.test.slow", {
    request: Type.Object({ ms: Type.Integer() }),
    response: Type.Object({ waited: Type.Integer() }),
  }),
} as const;

export const TestEvents = {
  happened: defineEvent("users.test.happened", Type.Object({ n: Type.Integer() })),
} as const;

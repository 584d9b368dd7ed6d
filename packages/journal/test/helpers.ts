import { defineEvent, defineRpc } from "@fundraise/protocol";
import pino, { type Logger } from "pino";
import Type from "typebox";

/** Silent unless LOG_LEVEL is set (e.g. LOG_LEVEL=debug pnpm --filter @fundraise/journal test). */
export function testLogger(): Logger {
  return pino({ level: process.env.LOG_LEVEL ?? "silent" });
}

/** Descriptors of the journal tests; `users.*` so they route to the `users.rpc` queue. */
export const TestRpc = {
  echo: defineRpc("users.test.echo", {
    request: Type.Object({ text: Type.String({ maxLength: 100 }) }),
    response: Type.Object({ text: Type.String(), requestId: Type.String() }),
  }),
  /** Carries a secret: never copied to the journal. */
  secret: defineRpc("users.test.secret", {
    request: Type.Object({ token: Type.String() }),
    response: Type.Object({ jwt: Type.String() }),
    journal: false,
  }),
} as const;

export const TestEvents = {
  happened: defineEvent("users.test.happened", Type.Object({ n: Type.Integer() })),
} as const;

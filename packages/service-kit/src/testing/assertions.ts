import { waitFor } from "@fundraise/bus/testing";
import { type EventDescriptor, isAppError, type PayloadOf } from "@fundraise/protocol";
import type pg from "pg";
import { expect } from "vitest";

/** Expects the call to fail with exactly this error kind and code (as rehydrated from the reply). */
export async function expectAppError(call: Promise<unknown>, kind: string, code: string): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${kind}/${code}, the call succeeded`).toBeDefined();
  expect(isAppError(error), `not an AppError: ${String(error)}`).toBe(true);
  expect({ kind: (error as { kind: string }).kind, code: (error as { code: string }).code }).toEqual({
    kind,
    code,
  });
}

/** Events of one kind in a service's outbox (published or not), oldest first: what it committed to send. */
export async function outboxPayloads<D extends EventDescriptor>(
  sql: pg.Pool,
  schema: string,
  event: D,
): Promise<PayloadOf<D>[]> {
  const { rows } = await sql.query<{ payload: PayloadOf<D> }>(
    `select convert_from(payload, 'UTF8')::jsonb as payload from ${schema}.outbox where event_name = $1 order by seq`,
    [event.name],
  );
  return rows.map((r) => r.payload);
}

/** An event a test consumer received. */
export interface ReceivedEvent {
  name: string;
  payload: Record<string, unknown>;
}

/** Waits until `events` holds one of this kind matching `match`; returns its payload. */
export async function receivedEvent<D extends EventDescriptor>(
  events: readonly ReceivedEvent[],
  event: D,
  match: Partial<PayloadOf<D>>,
): Promise<PayloadOf<D>> {
  const matches = (e: ReceivedEvent) =>
    e.name === event.name && Object.entries(match).every(([k, v]) => e.payload[k] === v);
  await waitFor(() => events.some(matches), 10_000, `${event.name} ${JSON.stringify(match)}`);
  return events.find(matches)?.payload as PayloadOf<D>;
}

/** `outboxPayloads` and `receivedEvent` for one service: its schema's outbox, its harness's events. */
export function serviceEvents(schema: string) {
  return {
    /** Events of one kind in the service's outbox (published or not), oldest first. */
    outboxPayloads: <D extends EventDescriptor>(sql: pg.Pool, event: D) => outboxPayloads(sql, schema, event),
    /** Waits until the harness's test consumer received an event of this kind matching `match`. */
    receivedEvent: <D extends EventDescriptor>(
      h: { events: readonly ReceivedEvent[] },
      event: D,
      match: Partial<PayloadOf<D>>,
    ) => receivedEvent(h.events, event, match),
  };
}

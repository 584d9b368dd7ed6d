import { randomBytes } from "node:crypto";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { createTestVhost, type TestVhost, waitFor } from "@fundraise/bus/testing";
import {
  type Caller,
  type EventDescriptor,
  isAppError,
  type PayloadOf,
  type UserRole,
  UsersEvents,
} from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import { silentLogger } from "@fundraise/service-kit";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { getAddress } from "ethers";
import pg from "pg";
import { expect } from "vitest";
import { startUsersApp } from "../app.ts";
import { loadConfig } from "../config.ts";

/**
 * The users service as the gateway and the other services meet it: its own database and vhost per test
 * file, the service on one bus, and the test on a second bus (`client`) calling it the way the gateway
 * does. A test consumer records every users.* event the service publishes.
 */
export interface Harness {
  client: AmqpBus;
  /** Direct SQL on the test database, for seeding and for looking at what the service wrote. */
  sql: pg.Pool;
  app: ServiceApp;
  vhostUrl: string;
  /** Events received by the test consumer, oldest first. */
  events: { name: string; payload: Record<string, unknown> }[];
  stop(): Promise<void>;
}

export async function startHarness(label: string): Promise<Harness> {
  const [db, vhost]: [TestDatabase, TestVhost] = await Promise.all([
    createTestDatabase(`users_${label}`),
    createTestVhost(`users_${label}`),
  ]);
  const config = loadConfig({ DATABASE_URL: db.url, AMQP_URL: vhost.url, LOG_LEVEL: "silent" });
  const bus = await createAmqpBus({ url: vhost.url, service: "users", logger: silentLogger() });
  const client = await createAmqpBus({ url: vhost.url, service: "test-client", logger: silentLogger() });
  const events: Harness["events"] = [];
  for (const event of Object.values(UsersEvents) as EventDescriptor[]) {
    await client.subscribe("test", event, async (payload) => {
      events.push({ name: event.name, payload: payload as Record<string, unknown> });
    });
  }
  const app = await startUsersApp({ config, log: silentLogger(), bus });
  const sql = new pg.Pool({ connectionString: db.url, max: 4 });
  return {
    client,
    sql,
    app,
    vhostUrl: vhost.url,
    events,
    async stop() {
      await client.close();
      await bus.close();
      await app.stop();
      await sql.end();
      await Promise.all([db.dispose(), vhost.dispose()]);
    },
  };
}

let sequence = 0;
/** A name no other test of the run uses (usernames are 3-32 characters). */
export const uniqueName = (prefix = "u") => `${prefix}${++sequence}_${randomBytes(3).toString("hex")}`;

export const randomAddress = () => getAddress(`0x${randomBytes(20).toString("hex")}`);

export interface SeededUser {
  id: number;
  address: string;
  username: string;
  mailAddress: string;
  role: UserRole;
}

/** Inserts a user straight into the table, as if it had signed up (verified unless told otherwise). */
export async function seedUser(
  sql: pg.Pool,
  options: {
    role?: UserRole;
    isVerified?: boolean;
    pendingUntil?: Date | null;
    username?: string;
    mailAddress?: string;
    address?: string;
  } = {},
): Promise<SeededUser> {
  const username = options.username ?? uniqueName();
  const mailAddress = options.mailAddress ?? `${username}@example.org`;
  const address = options.address ?? randomAddress();
  const role = options.role ?? "Base";
  const { rows } = await sql.query<{ id: number }>(
    `insert into users."user" (name, surname, address, mail_address, username, role, is_verified, pending_until,
       created_at, updated_at)
     values ('Ada', 'Lovelace', $1, $2, $3, $4, $5, $6, now(), now()) returning id`,
    [address, mailAddress, username, role, options.isVerified ?? true, options.pendingUntil ?? null],
  );
  return { id: rows[0]!.id, address, username, mailAddress, role };
}

/** The caller the gateway would pass for this user. */
export const callerOf = (user: SeededUser, role: UserRole = user.role): Caller => ({
  userId: user.id,
  username: user.username,
  address: user.address,
  role,
});

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

/** Events of one kind in the outbox (published or not), oldest first: what the service committed to send. */
export async function outboxPayloads<D extends EventDescriptor>(
  sql: pg.Pool,
  event: D,
): Promise<PayloadOf<D>[]> {
  const { rows } = await sql.query<{ payload: PayloadOf<D> }>(
    `select convert_from(payload, 'UTF8')::jsonb as payload from users.outbox where event_name = $1 order by seq`,
    [event.name],
  );
  return rows.map((r) => r.payload);
}

/** Waits until the test consumer received an event of this kind matching `match`; returns its payload. */
export async function receivedEvent<D extends EventDescriptor>(
  h: Harness,
  event: D,
  match: Partial<PayloadOf<D>>,
): Promise<PayloadOf<D>> {
  const matches = (e: Harness["events"][number]) =>
    e.name === event.name && Object.entries(match).every(([k, v]) => e.payload[k] === v);
  await waitFor(() => h.events.some(matches), 10_000, `${event.name} ${JSON.stringify(match)}`);
  return h.events.find(matches)!.payload as PayloadOf<D>;
}

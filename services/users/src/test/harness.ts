import { randomBytes } from "node:crypto";
import {
  type Caller,
  type EventDescriptor,
  type PayloadOf,
  type UserRole,
  UsersEvents,
} from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import {
  type HarnessService,
  outboxPayloads as kitOutboxPayloads,
  receivedEvent as kitReceivedEvent,
  type ServiceHarness,
  startServiceHarness,
} from "@fundraise/service-kit/testing";
import { getAddress } from "ethers";
import type pg from "pg";
import { startUsersApp } from "../app.ts";
import { loadConfig } from "../config.ts";

/** The users service as the gateway and the other services meet it (service-kit `startServiceHarness`). */
export interface Harness extends ServiceHarness {
  app: ServiceApp;
  vhostUrl: string;
}

/** Starts the users service in a harness; others start it beside their own with `usersService`. */
export const usersService: HarnessService = {
  name: "users",
  start: ({ env, log, bus }) => startUsersApp({ config: loadConfig(env), log, bus }),
};

export async function startHarness(label: string): Promise<Harness> {
  const h = await startServiceHarness({
    label: `users_${label}`,
    services: [usersService],
    record: UsersEvents,
  });
  return { ...h, app: h.apps[0] as ServiceApp, vhostUrl: h.vhost.url };
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

export { expectAppError } from "@fundraise/service-kit/testing";

/** Events of one kind in the users outbox (published or not), oldest first. */
export const outboxPayloads = <D extends EventDescriptor>(sql: pg.Pool, event: D) =>
  kitOutboxPayloads(sql, "users", event);

/** Waits until the test consumer received an event of this kind matching `match`; returns its payload. */
export const receivedEvent = <D extends EventDescriptor>(
  h: Harness,
  event: D,
  match: Partial<PayloadOf<D>>,
) => kitReceivedEvent(h.events, event, match);

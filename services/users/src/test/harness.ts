import { randomBytes } from "node:crypto";
import type { MessageContext } from "@fundraise/bus";
import {
  AuthRpc,
  type Caller,
  type ChainEvents,
  ErrorCode,
  type EventDescriptor,
  errors,
  type PayloadOf,
  ProjectsRpc,
  type ResponseOf,
  type SessionChange,
  type SessionState,
  type UserRole,
  UsersEvents,
} from "@fundraise/protocol";
import type { ServiceApp } from "@fundraise/service-kit";
import {
  type HarnessService,
  harnessOfFile,
  type ServiceHarness,
  serviceEvents,
  startServiceHarness,
} from "@fundraise/service-kit/testing";
import { getAddress } from "ethers";
import type pg from "pg";
import { startUsersApp } from "../app.ts";
import { loadConfig } from "../config.ts";
import { USERS_SCHEMA } from "../users/user.repository.ts";

/**
 * The users service as the gateway and the other services meet it (service-kit `startServiceHarness`),
 * with STAND-INS for the two neighbours a deletion and a role change call: the auth service's session
 * (`auth.session.apply`; the real one needs a chain, and is met in services/auth and e2e) and the projects
 * service's fence (`projects.user.fence` / `unfence`; the real one is met in services/projects' tests).
 */
export interface Harness extends ServiceHarness {
  app: ServiceApp;
  vhostUrl: string;
  sessions: SessionStandIn;
  projects: ProjectsStandIn;
  /** `seedUser` on the harness's database. */
  seedUser(options?: SeedOptions): Promise<SeededUser>;
  /** Events of one kind in the users outbox (published or not), oldest first. */
  outboxPayloads<D extends EventDescriptor>(event: D): Promise<PayloadOf<D>[]>;
  /** Waits until the test consumer received an event of this kind matching `match`; returns its payload. */
  receivedEvent<D extends EventDescriptor>(event: D, match: Partial<PayloadOf<D>>): Promise<PayloadOf<D>>;
}

/** Starts the users service in a harness; others start it beside their own with `usersService`. */
export const usersService: HarnessService = {
  name: "users",
  start: ({ env, ...deps }) => startUsersApp({ config: loadConfig(env), ...deps }),
};

/** A STAND-IN for the auth service's `auth.session.apply`: merges and records the changes it is sent. */
export interface SessionStandIn extends HarnessService {
  changes: SessionChange[];
  /** The session state of a user as the stand-in merged it. */
  state(userId: number): SessionState | undefined;
  /** While set, every call fails (auth unreachable). */
  failing: boolean;
}

export function sessionStandIn(): SessionStandIn {
  const states = new Map<number, SessionState>();
  const standIn: SessionStandIn = {
    name: "auth-session-stand-in",
    changes: [],
    failing: false,
    state: (userId) => states.get(userId),
    async start({ bus }) {
      await bus.serve(AuthRpc.applySession, async (change) => {
        if (standIn.failing)
          throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "stand-in: auth is down");
        standIn.changes.push(change);
        const held = states.get(change.userId) ?? { role: null, version: 0, revokedBelow: 0, deleted: false };
        const next: SessionState = {
          role: change.version > held.version ? (change.deleted ? null : change.role) : held.role,
          version: Math.max(held.version, change.version),
          revokedBelow: Math.max(held.revokedBelow, change.revoke ? change.version : 0),
          deleted: held.deleted || change.deleted,
        };
        states.set(change.userId, next);
        return next;
      });
      return {};
    },
  };
  return standIn;
}

/**
 * A STAND-IN for the projects service's RPCs the users service calls: the fence and the deleted user's rows
 * (refuses `owners`, records every call) and the pending invitations (`invitations`; unset: unavailable, as
 * when projects is down).
 */
export interface ProjectsStandIn extends HarnessService {
  owners: Set<number>;
  calls: { op: "fence" | "unfence" | "remove"; userId: number }[];
  invitations: ((userId: number, ctx: MessageContext) => Promise<Invitation[]>) | undefined;
}

type Invitation = ResponseOf<typeof ProjectsRpc.pendingInvitations>[number];

export function projectsStandIn(): ProjectsStandIn {
  const standIn: ProjectsStandIn = {
    name: "projects",
    owners: new Set(),
    calls: [],
    invitations: undefined,
    async start({ bus }) {
      await bus.serve(ProjectsRpc.pendingInvitations, async ({ userId }, ctx) => {
        if (!standIn.invitations)
          throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "stand-in: projects is down");
        return standIn.invitations(userId, ctx);
      });
      await bus.serve(ProjectsRpc.fenceUser, async ({ userId }) => {
        standIn.calls.push({ op: "fence", userId });
        if (standIn.owners.has(userId))
          throw errors.conflict(ErrorCode.USER_OWNS_PROJECT, "stand-in: the user owns a project");
        return null;
      });
      await bus.serve(ProjectsRpc.unfenceUser, async ({ userId }) => {
        standIn.calls.push({ op: "unfence", userId });
        return null;
      });
      await bus.serve(ProjectsRpc.removeUser, async ({ userId }) => {
        standIn.calls.push({ op: "remove", userId });
        return null;
      });
      return {};
    },
  };
  return standIn;
}

export async function startHarness(label: string): Promise<Harness> {
  const sessions = sessionStandIn();
  const projects = projectsStandIn();
  const h = await startServiceHarness({
    label: `users_${label}`,
    services: [sessions, projects, usersService],
    record: UsersEvents,
  });
  return {
    ...h,
    app: h.apps[2] as ServiceApp,
    vhostUrl: h.vhost.url,
    sessions,
    projects,
    seedUser: (options) => seedUser(h.sql, options),
    outboxPayloads: <D extends EventDescriptor>(event: D) => outboxPayloads(h.sql, event),
    receivedEvent: <D extends EventDescriptor>(event: D, match: Partial<PayloadOf<D>>) =>
      receivedEvent(h, event, match),
  };
}

/** The harness of this test file: started before its tests, stopped after them. */
export const useHarness = (label: string): Harness => harnessOfFile(() => startHarness(label));

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

export interface SeedOptions {
  role?: UserRole;
  isVerified?: boolean;
  pendingUntil?: Date | null;
  username?: string;
  mailAddress?: string;
  address?: string;
}

/** Inserts a user straight into the table, as if it had signed up (verified unless told otherwise). */
export async function seedUser(sql: pg.Pool, options: SeedOptions = {}): Promise<SeededUser> {
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

let factSequence = 1_000;
/**
 * A chain status fact of its own (its own transaction hash), in block `block` (else: its sequence number,
 * above 1,000), with the block's time `at` when given.
 */
export function chainStatusFact(
  address: string,
  role: PayloadOf<typeof ChainEvents.userStatusChanged>["role"],
  extra: { block?: number; at?: Date } = {},
): PayloadOf<typeof ChainEvents.userStatusChanged> {
  factSequence += 1;
  return {
    origin: {
      chainId: 31337,
      txHash: `0x${factSequence.toString(16).padStart(64, "0")}`,
      logIndex: 0,
      blockNumber: extra.block ?? factSequence,
      blockHash: `0x${"ef".repeat(32)}`,
      ...(extra.at ? { blockTimestamp: Math.floor(extra.at.getTime() / 1000) } : {}),
    },
    address,
    role,
  };
}

export { expectAppError } from "@fundraise/service-kit/testing";

const { outboxPayloads, receivedEvent } = serviceEvents(USERS_SCHEMA);

/**
 * What the race files (revocation-window, deletion-races) share: many signed-up users made fast, the two
 * gateway replicas, the answers of a race tallied, and the database's own view of what a race left.
 *
 * Rate limits are per client IP (the shared system believes X-Forwarded-For): sign-up, nonce and sign-in
 * limits allow a few dozen a minute per IP, so every few users, and every round of a race, get a client
 * (an IP) of their own.
 */
import pg from "pg";
import { expect } from "vitest";
import { type Answer, createClient } from "./client.ts";
import { expectEnvelope, hexOf, newContent, type ProjectDto, type User } from "./projects-kit.ts";
import type { SharedSystem } from "./shared.ts";

export type Client = ReturnType<typeof createClient>;

/** A project `owner` proposes (its Owner), small and unique; `created` gets its id for the clean-up. */
export async function smallProjectOf(
  client: Client,
  owner: User,
  label: string,
  created: { add(id: number): unknown },
): Promise<ProjectDto> {
  const content = newContent(label, false);
  const add = await client.api("POST", "/Project/Add", {
    token: owner.token,
    body: {
      projectName: `${label} ${Math.random().toString(36).slice(2, 10)}`,
      fileHex: hexOf(content.file),
    },
  });
  expectEnvelope(add, 201, `${label}: Add`);
  const project = add.body.data as ProjectDto;
  created.add(project.projectID);
  return project;
}

/** The shared system's two gateway replicas (global-setup starts a second one). */
export function gatewaysOf(sys: SharedSystem): [string, string] {
  const [a, b] = sys.gatewayUrls;
  expect(b, "the shared system runs a second gateway replica (e2e/global-setup.ts)").toBeDefined();
  return [a as string, b as string];
}

/** `work` on each item, at most `concurrency` at a time; answers in the items' order. */
export async function inBatches<T, R>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      results[i] = await work(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/**
 * `count` verified Base users, signed in (no chain role: Base needs no transaction). Made `concurrency`
 * at a time, each group of `perClient` from an IP of its own (sign-up is limited per IP).
 */
export async function signedInUsers(
  sys: () => SharedSystem,
  count: number,
  options: { concurrency?: number; perClient?: number } = {},
): Promise<User[]> {
  const perClient = options.perClient ?? 8;
  const clients = Array.from({ length: Math.ceil(count / perClient) }, () => createClient(sys));
  return inBatches(
    Array.from({ length: count }, (_, i) => i),
    options.concurrency ?? 12,
    (i) => signedInUser(clients[Math.floor(i / perClient)] as Client, i),
  );
}

/**
 * One verified user, signed in. The machine's Postgres serves every running system and is sometimes out
 * of connections for a while: a step answered 503 starts over with a new wallet (up to 8 tries over about
 * 10 s), anything else fails.
 */
const TRIES = 8;
async function signedInUser(client: Client, i: number): Promise<User> {
  for (let attempt = 1; ; attempt++) {
    const wallet = client.newWallet();
    const { res, mailAddress, username } = await client.register(wallet);
    let last = res;
    if (res.status === 201) {
      last = await client.verifyFromMail(mailAddress);
      if (last.status === 200) {
        last = await client.login(wallet);
        if (last.status === 200) {
          return { wallet, token: last.body.data as string, id: Number(res.body.data), username };
        }
      }
    }
    if (last.status !== 503 || attempt === TRIES) {
      throw new Error(`user ${i} (try ${attempt}): ${last.status} ${JSON.stringify(last.body)}`);
    }
    await new Promise((r) => setTimeout(r, Math.min(2000, 300 * attempt)));
  }
}

/** Orphans as lines of a failure message, the first `n` of each kind. */
export function describeOrphans(o: Orphans, n = 10): string {
  const part = <T>(title: string, rows: T[]) =>
    rows.length === 0
      ? []
      : [
          `${title}: ${rows.length}`,
          ...rows.slice(0, n).map((r) => `  ${JSON.stringify(r)}`),
          ...(rows.length > n ? [`  … ${rows.length - n} more`] : []),
        ];
  return [
    ...part("projects without exactly one accepted Owner", o.withoutOwner),
    ...part("memberships/invitations of deleted users", o.permissionsOfMissingUsers),
    ...part("ratings of deleted users", o.ratingsOfMissingUsers),
  ].join("\n");
}

/** A short, printable account of an answer for a failure message. */
export const brief = (res: Answer | undefined) =>
  res === undefined ? "-" : `${res.status}${res.status >= 300 ? ` ${JSON.stringify(res.body.message)}` : ""}`;

/** The envelope of rules.md §1.1, whatever the status: exactly three keys, success matching it. */
export function isEnvelope(res: Answer): boolean {
  const body = res.body as unknown;
  if (typeof body !== "object" || body === null) return false;
  const keys = Object.keys(body).sort().join(",");
  return keys === "data,message,success" && res.body.success === res.status < 300;
}

/** Outcome pairs of a race, counted: "201/409" → 12. */
export function tally(pairs: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const pair of pairs) counts[pair] = (counts[pair] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** The system's own database, read as it is: what the services recorded, not what they answered. */
export function openDatabase(sys: SharedSystem): pg.Pool {
  // One connection: the machine's Postgres serves every running system, and the races' checks are small.
  return new pg.Pool({ connectionString: sys.databaseUrl, max: 1 });
}

/** What rules.md §8.3 ("no orphaned projects") forbids, among the given projects and users. */
export interface Orphans {
  /** Projects without exactly one accepted Owner permission (count of accepted Owners given). */
  withoutOwner: { projectId: number; acceptedOwners: number }[];
  /** Permissions (memberships and invitations) whose user does not exist. */
  permissionsOfMissingUsers: { projectId: number; userId: number; role: string; isAccepted: boolean }[];
  /** Ratings whose user does not exist. */
  ratingsOfMissingUsers: { projectId: number; userId: number }[];
}

/** Where to look for orphans: these projects, the projects these addresses proposed, these users' rows. */
export interface OrphanScope {
  projectIds: number[];
  userIds: number[];
  addresses: string[];
}

/**
 * The orphans among `projectIds` (and every project whose proposer is one of `addresses`) and the rows of
 * `userIds`. The shared system's other files race nothing of these: what is found here is this file's.
 */
export async function orphans(pool: pg.Pool, scope: OrphanScope): Promise<Orphans> {
  // One snapshot for the three reads: an event applied between two of them must not hide an orphan.
  const db = await pool.connect();
  try {
    await db.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    return await orphansIn(db, scope);
  } finally {
    await db.query("ROLLBACK").catch(() => {});
    db.release();
  }
}

async function orphansIn(db: pg.PoolClient, scope: OrphanScope): Promise<Orphans> {
  const addresses = scope.addresses.map((a) => a.toLowerCase());
  const owners = await db.query<{ project_id: number; owners: number }>(
    `SELECT p.id AS project_id,
            (SELECT count(*)::int FROM projects.permission o
              WHERE o.project_id = p.id AND o.role = 'Owner' AND o.is_accepted) AS owners
       FROM projects.project p
      WHERE p.id = ANY($1::int[]) OR lower(p.proposer_address) = ANY($2::text[])`,
    [scope.projectIds, addresses],
  );
  const permissions = await db.query<{
    project_id: number;
    user_id: number;
    role: string;
    is_accepted: boolean;
  }>(
    `SELECT m.project_id, m.user_id, m.role, m.is_accepted FROM projects.permission m
      WHERE (m.user_id = ANY($1::int[]) OR m.project_id = ANY($2::int[]))
        AND NOT EXISTS (SELECT 1 FROM users."user" u WHERE u.id = m.user_id)
      ORDER BY m.project_id, m.user_id`,
    [scope.userIds, scope.projectIds],
  );
  const ratings = await db.query<{ project_id: number; user_id: number }>(
    `SELECT r.project_id, r.user_id FROM projects.rating r
      WHERE (r.user_id = ANY($1::int[]) OR r.project_id = ANY($2::int[]))
        AND NOT EXISTS (SELECT 1 FROM users."user" u WHERE u.id = r.user_id)
      ORDER BY r.project_id, r.user_id`,
    [scope.userIds, scope.projectIds],
  );
  return {
    withoutOwner: owners.rows
      .filter((r) => r.owners !== 1)
      .map((r) => ({ projectId: r.project_id, acceptedOwners: r.owners })),
    permissionsOfMissingUsers: permissions.rows.map((r) => ({
      projectId: r.project_id,
      userId: r.user_id,
      role: r.role,
      isAccepted: r.is_accepted,
    })),
    ratingsOfMissingUsers: ratings.rows.map((r) => ({ projectId: r.project_id, userId: r.user_id })),
  };
}

export const orphanCount = (o: Orphans) =>
  o.withoutOwner.length + o.permissionsOfMissingUsers.length + o.ratingsOfMissingUsers.length;

/**
 * The orphans once the system has settled: the services apply a deletion's consequences through events,
 * so a row may stand for a moment after the answers; polled until none is left or `timeoutMs` passed,
 * then what is left.
 */
export async function settledOrphans(db: pg.Pool, scope: OrphanScope, timeoutMs = 10_000): Promise<Orphans> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = await orphans(db, scope);
    if (orphanCount(found) === 0 || Date.now() > until) return found;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Seconds since `start` (a `performance.now()`), for the timings a file logs. */
export const since = (start: number) => `${((performance.now() - start) / 1000).toFixed(1)} s`;

type Wallet = { address: string; signMessage(message: string): Promise<string> };

/**
 * A sign-in through the chosen gateway replica made ready: the nonce fetched and signed now, the Login sent when the answer is called (so
 * the Login alone starts after whatever the caller waits for). A failed GetNonce is answered then.
 */
export async function readySignIn(
  client: Client,
  wallet: Wallet,
  gateway: string,
): Promise<() => Promise<Answer>> {
  const nonce = await client.api("GET", `/Authentication/GetNonce/${wallet.address}`, { gateway });
  if (nonce.status !== 200) return async () => nonce;
  const signedMessage = await wallet.signMessage(`LOGIN: ${nonce.body.data}`);
  return () =>
    client.api("POST", "/Authentication/Login", {
      gateway,
      body: { address: wallet.address, signedMessage },
    });
}

/** Two raced answers, and whether the other request started only once the deletion had answered. */
export interface Raced {
  other: Answer;
  deletion: Answer;
  /** Milliseconds from the deletion's answer to the other request's start; > 0: it started after. */
  startedAfterDeletion: number;
}

/**
 * Two requests raced with their starts `offsetMs` apart: `other` first when the offset is negative, the
 * deletion first when it is positive, both at once at 0.
 */
export async function staggered(
  other: () => Promise<Answer>,
  deletion: () => Promise<Answer>,
  offsetMs: number,
): Promise<Raced> {
  const later = (ms: number, start: () => Promise<Answer>) =>
    ms <= 0 ? start() : new Promise<void>((r) => setTimeout(r, ms)).then(start);
  let otherStarted = 0;
  let deletionAnswered = 0;
  const [o, d] = await Promise.all([
    later(offsetMs, () => {
      otherStarted = performance.now();
      return other();
    }),
    later(-offsetMs, deletion).then((answer) => {
      deletionAnswered = performance.now();
      return answer;
    }),
  ]);
  return { other: o, deletion: d, startedAfterDeletion: otherStarted - deletionAnswered };
}

/**
 * The start offsets the races sweep (ms; positive: the deletion starts first): at once most often, and
 * either request a little or well ahead, so both orders and the moments around each answer are tried.
 */
const OFFSETS = [0, 0, 10, -10, 30, -30, 60, -60, 100, -100];
/** A round's offset; rounds 4k … 4k+3 share one (the low bits pick replicas and who deletes). */
export const offsetOf = (round: number) => OFFSETS[(round >> 2) % OFFSETS.length] as number;

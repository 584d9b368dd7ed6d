import { randomBytes, randomInt } from "node:crypto";
import { createInMemoryBus } from "@fundraise/bus/testing";
import type { ChainRole } from "@fundraise/contracts";
import {
  ErrorCode,
  errors,
  type RequestOf,
  type SessionState,
  type UserAccount,
  type UserRole,
  UsersRpc,
} from "@fundraise/protocol";
import {
  createMemoryStore,
  type Emitted,
  type MemoryTx,
  withCommitted,
} from "@fundraise/service-kit/testing";
import { Wallet } from "ethers";
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify } from "jose";
import type { Static } from "typebox";
import type { ChainReader } from "../chain/chain.ts";
import { type KeyStore, SIGNING_ALGORITHM } from "../keys/key-store.ts";
import { createTokenIssuer } from "../keys/token-issuer.ts";
import type { Mailer, VerificationMail } from "../mail/mailer.ts";
import { type SessionStore, STALE, sessionOfChange } from "../sessions/session-store.ts";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import type { NonceStore } from "../sign-in/nonce-store.ts";
import { type Counters, type Limit, type RateLimiter, rateLimited } from "../sign-in/rate-limiter.ts";
import { createSignInService } from "../sign-in/sign-in.service.ts";
import type { EmailVerification } from "../sign-up/email-verification.entity.ts";
import type { SignUpRepository, SignUpTx } from "../sign-up/sign-up.repository.ts";
import { createSignUpService } from "../sign-up/sign-up.service.ts";
import { createSignedMessageVerifier } from "../signatures/signed-message.ts";
import { formatSiweMessage } from "../signatures/siwe.ts";

type Account = Static<typeof UserAccount>;

/**
 * FOR TESTS ONLY: what the auth service keeps in Redis, in memory: fixed-window rate-limit counters (the
 * limiter's, and those a nonce issue counts in the same step), per the rules of rate-limiter.ts. The Lua
 * scripts themselves are the integration suites' (sign-in/rate-limiter.int.test.ts).
 */
export function createMemoryLimits(clock: () => number = Date.now) {
  const counts = new Map<string, { n: number; until: number }>();
  const live = (key: string) => {
    const entry = counts.get(key);
    return entry && entry.until > clock() ? entry : undefined;
  };
  const counters = (limits: Limit[]): Counters => ({
    keys: limits.map(
      (l) => `rate:${l.action}:${l.subject.toLowerCase()}:${Math.floor(clock() / 1000 / l.windowSeconds)}`,
    ),
    args: limits.flatMap((l) => [l.windowSeconds + 1, l.limit]),
  });
  /** Counts one call on every counter; true when any is past its limit (as COUNT_LUA's over_limit). */
  const overLimit = ({ keys, args }: Counters) => {
    let over = false;
    keys.forEach((key, i) => {
      const entry = live(key) ?? { n: 0, until: clock() + Number(args[2 * i]) * 1000 };
      entry.n += 1;
      counts.set(key, entry);
      if (entry.n > Number(args[2 * i + 1])) over = true;
    });
    return over;
  };
  const rateLimiter: RateLimiter = {
    counters,
    async hit(limits) {
      const within = counters(limits);
      if (overLimit(within)) throw rateLimited();
      return {
        async refund() {
          for (const key of within.keys) {
            const entry = live(key);
            if (entry) entry.n -= 1;
          }
        },
      };
    },
  };
  return { rateLimiter, overLimit };
}

/**
 * FOR TESTS ONLY: nonces in memory, with nonce-store.ts's rules: each lives `ttlSeconds`; several may be
 * outstanding per address, at most `maxPerAddress` (past it, the requesting IP's oldest goes first, else
 * the oldest of all); an issue past a rate limit issues nothing; a nonce is taken once.
 */
export function createMemoryNonces(options: {
  ttlSeconds: number;
  maxPerAddress: number;
  overLimit: (within: Counters) => boolean;
  clock?: () => number;
}): NonceStore & { outstanding(address: string): { nonce: number; ip: string }[] } {
  const clock = options.clock ?? Date.now;
  const byAddress = new Map<string, { nonce: number; ip: string; until: number }[]>();
  const liveOf = (address: string) => {
    const key = address.toLowerCase();
    const list = (byAddress.get(key) ?? []).filter((entry) => entry.until > clock());
    byAddress.set(key, list);
    return list;
  };
  return {
    async issue(address, ip, within) {
      if (options.overLimit(within)) throw rateLimited();
      const list = liveOf(address);
      if (list.length >= options.maxPerAddress) {
        const drop = [...list.filter((e) => e.ip === ip), ...list.filter((e) => e.ip !== ip)].slice(
          0,
          list.length - options.maxPerAddress + 1,
        );
        byAddress.set(
          address.toLowerCase(),
          list.filter((e) => !drop.includes(e)),
        );
      }
      const nonce = randomInt(10_000_000, 2 ** 31);
      liveOf(address).push({ nonce, ip, until: clock() + options.ttlSeconds * 1000 });
      return nonce;
    },
    async take(address, nonce) {
      const list = liveOf(address);
      const index = list.findIndex((entry) => String(entry.nonce) === nonce);
      if (index < 0) return false;
      list.splice(index, 1);
      return true;
    },
    live: async (address) =>
      liveOf(address)
        .map((entry) => entry.nonce)
        .reverse(),
    outstanding: (address) => liveOf(address).map(({ nonce, ip }) => ({ nonce, ip })),
  };
}

/**
 * FOR TESTS ONLY: the session states in memory, merged as session-store.ts merges them (a newer version's
 * role wins, the revocation only rises, a deletion stays), without Postgres or Redis.
 */
export function createMemorySessions(): SessionStore & { readonly states: Map<number, SessionState> } {
  const states = new Map<number, SessionState>();
  const merge = (userId: number, row: SessionState): SessionState => {
    const held = states.get(userId);
    const merged = held
      ? {
          role: row.version > held.version ? row.role : held.role,
          version: Math.max(held.version, row.version),
          revokedBelow: Math.max(held.revokedBelow, row.revokedBelow),
          deleted: held.deleted || row.deleted,
        }
      : row;
    states.set(userId, merged);
    return { ...merged };
  };
  return {
    states,
    apply: async (change) => merge(change.userId, sessionOfChange(change)),
    async signIn(account) {
      const state = merge(account.id, {
        role: account.role,
        version: account.version,
        revokedBelow: 0,
        deleted: false,
      });
      return state.deleted || state.version > account.version ? STALE : state;
    },
    rebuild: async (userId) =>
      states.get(userId) ?? { role: null, version: 0, revokedBelow: 0, deleted: false },
  };
}

/**
 * FOR TESTS ONLY: the account copy in memory (account-copy.ts's rules): a verified account read from the
 * users service is kept; `fresh` and a miss ask the users service; `invalidate` drops an entry.
 */
export function createMemoryAccountCopy(
  fetch: (address: string, ctx: Parameters<AccountCopy["byAddress"]>[1]) => Promise<Account | null>,
): AccountCopy & { readonly kept: Map<string, Account> } {
  const kept = new Map<string, Account>();
  return {
    kept,
    async byAddress(address, ctx, options = {}) {
      const entry = kept.get(address.toLowerCase());
      if (entry && !options.fresh) return { account: structuredClone(entry) };
      const account = await fetch(address, ctx);
      if (account?.isVerified) kept.set(address.toLowerCase(), structuredClone(account));
      return { account };
    },
    invalidate: async (address) => void kept.delete(address.toLowerCase()),
  };
}

/** FOR TESTS ONLY: one ES256 signing key in memory (key-store.ts keeps them in Postgres and rotates them). */
export async function createMemoryKeys(): Promise<KeyStore> {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const kid = `memory-${randomBytes(4).toString("hex")}`;
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALGORITHM, use: "sig" };
  return {
    ensureCurrent: async () => undefined,
    rotate: async () => kid,
    signingKey: async () => ({ kid, key: privateKey }),
    jwks: async () => ({ keys: [jwk] }),
  };
}

/** FOR TESTS ONLY: the mails the auth service sends, kept; `failing` makes every send reject. */
export function createMemoryMailer(): Mailer & { readonly sent: VerificationMail[]; failing: boolean } {
  const mailer = {
    sent: [] as VerificationMail[],
    failing: false,
    async sendVerification(mail: VerificationMail) {
      if (mailer.failing) throw new Error("SMTP: connection refused");
      mailer.sent.push(mail);
    },
    close: () => undefined,
  };
  return mailer;
}

/**
 * FOR TESTS ONLY: sign-up's repository in memory (service-kit's MemoryStore: a transaction commits as a
 * whole or not at all, one at a time), with sign-up.repository.ts's rules; the SQL is the integration
 * suites'.
 */
export interface MemoryVerifications extends SignUpRepository {
  /** The committed verification links, by id. */
  readonly verifications: Map<number, EmailVerification>;
  /** Events of committed transactions, oldest first. */
  readonly events: Emitted[];
}

export function createMemoryVerifications(): MemoryVerifications {
  type State = { verifications: Map<number, EmailVerification> };
  const store = createMemoryStore<State>({ verifications: new Map() }, (s) => ({
    verifications: new Map([...s.verifications].map(([id, row]) => [id, { ...row }])),
  }));
  let nextId = 1;
  const rowsOf = (s: State, userId: number) =>
    [...s.verifications.values()].filter((row) => row.userId === userId).sort((a, b) => a.id - b.id);

  const txOf = ({ state, emit, claimOnce }: MemoryTx<State>): SignUpTx => ({
    pendingExpiryOf: async (userId) =>
      rowsOf(state, userId)
        .filter((row) => row.usedAt === null)
        .at(-1)?.expiresAt,
    async replaceUnused(row) {
      for (const old of rowsOf(state, row.userId))
        if (old.usedAt === null) state.verifications.delete(old.id);
      const id = nextId++;
      state.verifications.set(id, { id, ...row, createdAt: new Date(), usedAt: null } as EmailVerification);
    },
    async markUsed(id, at) {
      const row = state.verifications.get(id);
      if (!row || row.usedAt !== null) return false;
      row.usedAt = at;
      return true;
    },
    removeAllOf: async (userId) => {
      for (const row of rowsOf(state, userId)) state.verifications.delete(row.id);
    },
    emit: async (event, payload) => emit(event, payload),
    claimOnce: async (consumer, messageKey) => claimOnce(consumer, messageKey),
  });

  const repository: Omit<MemoryVerifications, "verifications" | "events"> = {
    transaction: (work) => store.transaction((tx) => work(txOf(tx))),
    findByTokenHash: async (tokenHash) => {
      const row = [...store.state.verifications.values()].find((r) => r.tokenHash === tokenHash);
      return row ? { ...row } : null;
    },
    async pruneExpired(before) {
      return store.transaction(async ({ state }) => {
        const gone = [...state.verifications.values()].filter((row) => row.expiresAt < before);
        for (const row of gone) state.verifications.delete(row.id);
        return gone.length;
      });
    },
  };
  return withCommitted(store, ["verifications"], repository);
}

/**
 * A STAND-IN FOR THE USERS SERVICE on the in-memory bus, not the users service: the four calls the auth
 * service makes of it. `register` makes a pending account (the same pending data again: `resent`; an
 * address whose account is verified: 409), `mark-verified` verifies it, `by-address` reads it,
 * `set-chain-role` takes the chain's role (and raises the version, as a role change does). Its own rules
 * (replacing sign-ups, which role wins) are the users service's tests'.
 */
export interface UsersStandIn {
  /** The accounts, by lower-case address. */
  readonly accounts: Map<string, Account>;
  readonly registered: RequestOf<typeof UsersRpc.register>[];
  readonly chainRoles: { address: string; role: UserRole }[];
  /** Adds a verified account (a user who signed up before the test). */
  seed(address: string, overrides?: Partial<Account>): Account;
  /** Changes the account as an admin would: a new role at a higher version. */
  changeRole(address: string, role: UserRole): Account;
  /** Every `by-address` read so far. */
  reads: number;
}

/** Settings as the auth service's defaults have them (config.ts). */
export const SETTINGS = {
  publicBaseUrl: "http://localhost:8080",
  siweDomain: "localhost:8080",
  nonceTtlSeconds: 300,
  clockSkewSeconds: 60,
  noncesPerAddress: 5,
  verificationTtlHours: 24,
  chainId: 31337,
  limits: {
    noncePerIpPerMinute: 60,
    noncePerIpAddressPerMinute: 10,
    loginFailuresPerIpPerMinute: 30,
    loginFailuresPerIpAddressPerMinute: 10,
    registerPerIpPerHour: 30,
    registerPerIpAddressPerHour: 5,
  },
};

/**
 * The auth service's sign-in and sign-up use cases on memory, wired as `startAuthApp` wires them (the real
 * signed-message check, token issuer and services) with what it keeps in Redis and Postgres in memory,
 * A STAND-IN FOR THE USERS SERVICE on the in-memory bus, and a chain stand-in whose roles the test sets.
 */
export async function authOnMemory(options: { legacyMessages?: boolean; ttlSeconds?: number } = {}) {
  const bus = createInMemoryBus();
  const limits = createMemoryLimits();
  const nonces = createMemoryNonces({
    ttlSeconds: SETTINGS.nonceTtlSeconds,
    maxPerAddress: SETTINGS.noncesPerAddress,
    overLimit: limits.overLimit,
  });
  const sessions = createMemorySessions();
  const keys = await createMemoryKeys();
  const mailer = createMemoryMailer();
  const verifications = createMemoryVerifications();

  let nextUserId = 1;
  const users: UsersStandIn = {
    accounts: new Map(),
    registered: [],
    chainRoles: [],
    reads: 0,
    seed(address, overrides = {}) {
      const id = nextUserId++;
      const account: Account = {
        id,
        address,
        username: `user${id}`,
        name: "Ada",
        surname: "Lovelace",
        mailAddress: `user${id}@example.org`,
        role: "Base",
        chainRole: "Base",
        isVerified: true,
        version: 1,
        ...overrides,
      };
      users.accounts.set(address.toLowerCase(), account);
      return account;
    },
    changeRole(address, role) {
      const account = users.accounts.get(address.toLowerCase());
      if (!account) throw new Error(`no account at ${address}`);
      account.role = role;
      account.version += 1;
      return account;
    },
  };
  const accountWithId = (userId: number) => [...users.accounts.values()].find((a) => a.id === userId);
  await bus.serve(UsersRpc.byAddress, async ({ address }) => {
    users.reads += 1;
    return users.accounts.get(address.toLowerCase()) ?? null;
  });
  await bus.serve(UsersRpc.setChainRole, async ({ address, role }) => {
    users.chainRoles.push({ address, role });
    const account = users.accounts.get(address.toLowerCase());
    if (!account) return null;
    account.chainRole = role;
    if (account.role !== role) {
      account.role = role;
      account.version += 1;
    }
    return account;
  });
  await bus.serve(UsersRpc.register, async (request) => {
    users.registered.push(request);
    const held = users.accounts.get(request.address.toLowerCase());
    if (held?.isVerified) {
      throw errors.conflict(ErrorCode.USER_ADDRESS_TAKEN, "This address is already registered.");
    }
    const same =
      held &&
      held.username === request.username &&
      held.mailAddress === request.mailAddress &&
      held.name === request.name &&
      held.surname === request.surname;
    if (held && same) return { userId: held.id, replaced: false, resent: true };
    const account = users.seed(request.address, {
      username: request.username,
      name: request.name,
      surname: request.surname,
      mailAddress: request.mailAddress,
      isVerified: false,
      chainRole: null,
    });
    return { userId: account.id, replaced: held !== undefined, resent: false };
  });
  await bus.serve(UsersRpc.markVerified, async ({ userId, mailAddress }) => {
    const account = accountWithId(userId);
    if (!account || account.mailAddress !== mailAddress) {
      throw errors.notFound(ErrorCode.USER_NOT_FOUND, "No such user.");
    }
    account.isVerified = true;
    return account;
  });

  /** The chain as sign-in reads it: every address Base unless set; `down` fails every read. */
  const chain = {
    roles: new Map<string, ChainRole>(),
    down: false,
    reads: 0,
  };
  const chainReader: ChainReader = {
    chainId: SETTINGS.chainId,
    async roleOf(address) {
      chain.reads += 1;
      if (chain.down) {
        throw errors.unavailable(ErrorCode.CHAIN_UNAVAILABLE, "The blockchain cannot be reached right now.");
      }
      return chain.roles.get(address.toLowerCase()) ?? "Base";
    },
    hasCode: async () => false,
    isValidSignature: async () => false,
  };

  const accounts = createMemoryAccountCopy((address, ctx) => bus.call(UsersRpc.byAddress, { address }, ctx));
  const verifySignedMessage = createSignedMessageVerifier({
    nonces,
    chain: chainReader,
    settings: { ...SETTINGS, legacyMessages: options.legacyMessages ?? true },
  });
  const signIn = createSignInService({
    bus,
    accounts,
    nonces,
    rateLimiter: limits.rateLimiter,
    chain: chainReader,
    tokens: createTokenIssuer({
      keys,
      issuer: "fundraise-auth",
      audience: "fundraise",
      ttlSeconds: options.ttlSeconds ?? 7200,
    }),
    sessions,
    verifySignedMessage,
    limits: SETTINGS.limits,
  });
  const signUp = createSignUpService({
    bus,
    verifications,
    rateLimiter: limits.rateLimiter,
    mailer,
    verifySignedMessage,
    settings: {
      publicBaseUrl: SETTINGS.publicBaseUrl,
      verificationTtlHours: SETTINGS.verificationTtlHours,
      limits: SETTINGS.limits,
    },
  });

  return {
    signIn,
    signUp,
    bus,
    users,
    chain,
    nonces,
    sessions,
    accounts,
    mailer,
    verifications,
    /** A token's claims, checked against the key store's JWKS as the gateway checks them. */
    async claimsOf(token: string) {
      const { payload } = await jwtVerify(token, createLocalJWKSet((await keys.jwks()) as never), {
        issuer: "fundraise-auth",
        audience: "fundraise",
        algorithms: [SIGNING_ALGORITHM],
      });
      return payload as Record<string, unknown>;
    },
  };
}

/** A fresh wallet (a random key: no mnemonic to derive). */
export const newWallet = () => new Wallet(`0x${randomBytes(32).toString("hex")}`);

let ips = 0;
/** A client IP of its own (TEST-NET-3). */
export const newOrigin = () => ({ ip: `203.0.113.${++ips % 250}` });

/** An EIP-4361 message the settings accept; override a field to break one check. */
export function siweMessage(
  address: string,
  nonce: number | string,
  overrides: Partial<Parameters<typeof formatSiweMessage>[0]> = {},
): string {
  return formatSiweMessage({
    domain: SETTINGS.siweDomain,
    address,
    statement: "Sign in to Fundraise.",
    uri: `${SETTINGS.publicBaseUrl}/login`,
    chainId: SETTINGS.chainId,
    nonce: String(nonce),
    issuedAt: new Date(),
    ...overrides,
  });
}

import { randomBytes } from "node:crypto";
import type { Logger } from "@fundraise/service-kit";
import type { EntityManager } from "@mikro-orm/postgresql";
import { type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { SigningKey } from "./signing-key.entity.ts";

export const SIGNING_ALGORITHM = "ES256";

export interface SigningKeyHandle {
  kid: string;
  key: CryptoKey;
}

export interface KeyStore {
  /** Creates a key when there is none or the newest is older than the rotation period. */
  ensureCurrent(): Promise<void>;
  /** Creates a new signing key now and retires the others (their public halves stay in the JWKS). */
  rotate(): Promise<string>;
  /** The key that signs now. */
  signingKey(): Promise<SigningKeyHandle>;
  /** Public keys that may still have live tokens: the current key and keys retired less than a token lifetime ago. */
  jwks(): Promise<{ keys: Record<string, unknown>[] }>;
}

/** How long an instance keeps using the key it loaded before looking for a newer one. */
export const SIGNING_KEY_CACHE_MS = 60_000;
/** Margin for clocks and in-flight requests when deciding that a retired key can no longer matter. */
const MARGIN_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

/**
 * ES256 signing keys in `auth.signing_key`. Creation and rotation run under a transaction-scoped advisory
 * lock, so instances of a scaled service agree on one newest key. A retired key loses its private half at
 * once (it never signs again) and leaves the JWKS one token lifetime (plus the cache period and a margin)
 * after retirement, when the last token it signed has expired: rotating logs nobody out.
 */
export function createKeyStore(deps: {
  em: () => EntityManager;
  log: Logger;
  rotationDays: number;
  tokenTtlSeconds: number;
  now?: () => Date;
}): KeyStore {
  const now = deps.now ?? (() => new Date());
  const rotationMs = deps.rotationDays * DAY_MS;
  const publishedAfterRetirementMs = deps.tokenTtlSeconds * 1000 + SIGNING_KEY_CACHE_MS + MARGIN_MS;
  let cached: { handle: SigningKeyHandle; loadedAt: number } | undefined;

  async function createKey(em: EntityManager, at: Date): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const kid = `${at.toISOString().slice(0, 10).replaceAll("-", "")}-${randomBytes(8).toString("hex")}`;
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALGORITHM, use: "sig" };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALGORITHM };
    await em.nativeUpdate(SigningKey, { retiredAt: null }, { retiredAt: at, privateJwk: null });
    em.create(SigningKey, {
      kid,
      algorithm: SIGNING_ALGORITHM,
      publicJwk: publicJwk as Record<string, unknown>,
      privateJwk: privateJwk as Record<string, unknown>,
      createdAt: at,
      retiredAt: null,
    });
    await em.flush();
    // Keys that can no longer verify any live token are of no use to anyone.
    await em.nativeDelete(SigningKey, {
      retiredAt: { $lt: new Date(at.getTime() - publishedAfterRetirementMs - DAY_MS) },
    });
    return kid;
  }

  async function withLock<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return deps.em().transactional(async (em) => {
      await em.execute("select pg_advisory_xact_lock(hashtext('auth:signing_key'))");
      return work(em);
    });
  }

  return {
    async ensureCurrent() {
      const created = await withLock(async (em) => {
        const at = now();
        const newest = await em.findOne(
          SigningKey,
          { retiredAt: null, privateJwk: { $ne: null } },
          { orderBy: { createdAt: "desc" } },
        );
        if (newest && newest.createdAt.getTime() > at.getTime() - rotationMs) return undefined;
        return createKey(em, at);
      });
      if (created) {
        cached = undefined;
        deps.log.info({ kid: created }, "new token signing key created");
      }
    },
    async rotate() {
      const kid = await withLock((em) => createKey(em, now()));
      cached = undefined;
      deps.log.info({ kid }, "token signing key rotated");
      return kid;
    },
    async signingKey() {
      if (cached && Date.now() - cached.loadedAt < SIGNING_KEY_CACHE_MS) return cached.handle;
      const row = await deps
        .em()
        .findOne(
          SigningKey,
          { retiredAt: null, privateJwk: { $ne: null } },
          { orderBy: { createdAt: "desc" } },
        );
      if (!row?.privateJwk) throw new Error("no signing key: ensureCurrent() must run at start-up");
      const key = (await importJWK(row.privateJwk as JWK, SIGNING_ALGORITHM)) as CryptoKey;
      cached = { handle: { kid: row.kid, key }, loadedAt: Date.now() };
      return cached.handle;
    },
    async jwks() {
      const since = new Date(now().getTime() - publishedAfterRetirementMs);
      const rows = await deps
        .em()
        .find(
          SigningKey,
          { $or: [{ retiredAt: null }, { retiredAt: { $gt: since } }] },
          { orderBy: { createdAt: "desc" } },
        );
      return { keys: rows.map((row) => ({ ...row.publicJwk })) };
    },
  };
}

import { randomUUID } from "node:crypto";
import type { UserAccount } from "@fundraise/protocol";
import { SignJWT } from "jose";
import type { Static } from "typebox";
import { type KeyStore, SIGNING_ALGORITHM } from "./key-store.ts";

export interface TokenIssuer {
  /** A signed access token for the account, with the claims of behaviour.md §2. */
  /** `notBefore` (epoch seconds): the token is dated no earlier, so a revocation at that second spares it. */
  issue(
    account: Static<typeof UserAccount>,
    options?: { notBefore?: number },
  ): Promise<{ token: string; issuedAt: number; expiresAt: number }>;
}

export function createTokenIssuer(deps: {
  keys: KeyStore;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}): TokenIssuer {
  return {
    async issue(account, options = {}) {
      const { kid, key } = await deps.keys.signingKey();
      const issuedAt = Math.max(Math.floor(Date.now() / 1000), options.notBefore ?? 0);
      const expiresAt = issuedAt + deps.ttlSeconds;
      const token = await new SignJWT({
        nameid: String(account.id),
        unique_name: account.username,
        role: account.role,
        // The wallet address, as behaviour.md §2 and the first implementation have it (not the surname).
        family_name: account.address,
        address: account.address,
      })
        .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: "JWT" })
        .setSubject(String(account.id))
        .setIssuer(deps.issuer)
        .setAudience(deps.audience)
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .setJti(randomUUID())
        .sign(key);
      return { token, issuedAt, expiresAt };
    },
  };
}

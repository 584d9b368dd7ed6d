import { randomUUID } from "node:crypto";
import type { UserAccount } from "@fundraise/protocol";
import { SignJWT } from "jose";
import type { Static } from "typebox";
import { type KeyStore, SIGNING_ALGORITHM } from "./key-store.ts";

export interface TokenIssuer {
  /** A signed access token for the account, with the claims of behaviour.md §2. */
  issue(account: Static<typeof UserAccount>): Promise<{ token: string; issuedAt: number; expiresAt: number }>;
}

export function createTokenIssuer(deps: {
  keys: KeyStore;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}): TokenIssuer {
  return {
    async issue(account) {
      const { kid, key } = await deps.keys.signingKey();
      const issuedAt = Math.floor(Date.now() / 1000);
      const expiresAt = issuedAt + deps.ttlSeconds;
      const token = await new SignJWT({
        nameid: String(account.id),
        unique_name: account.username,
        role: account.role,
        family_name: account.surname,
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

import { KeyObject, randomUUID, sign } from "node:crypto";
import { SESSION_VERSION_CLAIM, type UserAccount } from "@fundraise/protocol";
import type { CryptoKey } from "jose";
import type { Static } from "typebox";
import { type KeyStore, SIGNING_ALGORITHM } from "./key-store.ts";

export interface TokenIssuer {
  /**
   * A signed access token for the account, with the claims of rules.md §2.13 and `sv`, the account
   * version it was issued at (an admin's change at a later version revokes it; protocol sessions.ts).
   */
  issue(account: Static<typeof UserAccount>): Promise<{ token: string; issuedAt: number; expiresAt: number }>;
}

export function createTokenIssuer(deps: {
  keys: KeyStore;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}): TokenIssuer {
  // The key store hands out WebCrypto keys; node:crypto signs with the same key synchronously, without
  // the WebCrypto job queue jose's SignJWT goes through (a sign-in's token was 7 % of the auth process).
  let current: { key: CryptoKey; keyObject: KeyObject } | undefined;
  const keyObjectOf = (key: CryptoKey) => {
    if (current?.key !== key)
      current = { key, keyObject: KeyObject.from(key as Parameters<typeof KeyObject.from>[0]) };
    return current.keyObject;
  };

  return {
    async issue(account) {
      const { kid, key } = await deps.keys.signingKey();
      const issuedAt = Math.floor(Date.now() / 1000);
      const expiresAt = issuedAt + deps.ttlSeconds;
      const header = { alg: SIGNING_ALGORITHM, kid, typ: "JWT" };
      const claims = {
        nameid: String(account.id),
        unique_name: account.username,
        role: account.role,
        // The wallet address, as rules.md §2.13 and the first backend have it (not the surname).
        family_name: account.address,
        address: account.address,
        sub: String(account.id),
        iss: deps.issuer,
        aud: deps.audience,
        iat: issuedAt,
        exp: expiresAt,
        jti: randomUUID(),
        [SESSION_VERSION_CLAIM]: account.version,
      };
      const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
      // ES256 (RFC 7518 §3.4): the signature is r || s, 32 bytes each, not DER.
      const signature = sign("sha256", Buffer.from(signingInput), {
        key: keyObjectOf(key),
        dsaEncoding: "ieee-p1363",
      });
      return { token: `${signingInput}.${signature.toString("base64url")}`, issuedAt, expiresAt };
    },
  };
}

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");

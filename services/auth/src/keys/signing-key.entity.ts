import { defineEntity, p } from "@mikro-orm/core";

/**
 * A token signing key pair (ES256), as JWKs. The newest unretired key signs; retired keys keep only their
 * public half, listed in the JWKS until every token they signed has expired.
 */
export const SigningKey = defineEntity({
  name: "SigningKey",
  tableName: "signing_key",
  properties: {
    kid: p.string().length(64).primary(),
    algorithm: p.string().length(16),
    publicJwk: p.json<Record<string, unknown>>(),
    privateJwk: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime(),
    retiredAt: p.datetime().nullable(),
  },
});
export type SigningKey = InstanceType<typeof SigningKey.class>;

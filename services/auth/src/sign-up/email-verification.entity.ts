import { defineEntity, p } from "@mikro-orm/core";

/** A verification link sent to `mailAddress`: only the token's SHA-256 (hex) is stored. */
export const EmailVerification = defineEntity({
  name: "EmailVerification",
  tableName: "email_verification",
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    mailAddress: p.string().length(254),
    tokenHash: p.string().length(64),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    usedAt: p.datetime().nullable(),
  },
});
export type EmailVerification = InstanceType<typeof EmailVerification.class>;

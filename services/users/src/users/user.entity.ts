import { defineEntity, p } from "@mikro-orm/core";

/**
 * A platform user. The wallet address is the identity (stored EIP-55, unique case-insensitively);
 * username and e-mail are unique case-insensitively among users (see the migration's indexes).
 */
export const User = defineEntity({
  name: "User",
  tableName: "user",
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(100),
    surname: p.string().length(100),
    address: p.string().length(42),
    mailAddress: p.string().length(254).nullable(),
    username: p.string().length(32),
    role: p.string().length(16).default("Base"),
    isVerified: p.boolean().default(false),
    /** An unverified sign-up blocks its address, username and e-mail until then; null: never expires. */
    pendingUntil: p.datetime().nullable(),
    /** How the sign-up proved the wallet's consent: `legacy` (the replayable `REGISTER` text) or `nonce`. */
    proof: p.string().length(8).default("legacy"),
    /** The chain's role for the address when last seen (a sign-in read or a chain fact); null: never seen. */
    chainRole: p.string().length(16).nullable(),
    /** Chain position of the last chain fact applied: an older fact is ignored. */
    chainRoleBlock: p.bigint("number").nullable(),
    chainRoleLogIndex: p.integer().nullable(),
    /** When an admin last changed the role; a chain change must be newer to override it. */
    adminRoleAt: p.datetime().nullable(),
    /** The chain node's head block at that change: facts up to it are older, later ones newer (role-precedence.ts). */
    adminRoleBlock: p.bigint("number").nullable(),
    /**
     * Raised by every role change; the session and each token carry it (protocol sessions.ts): an admin's
     * change revokes the tokens issued at an older version.
     */
    accountVersion: p.bigint("number").default(1),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type User = InstanceType<typeof User.class>;

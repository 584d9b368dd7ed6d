import { createHash, randomBytes } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { EmailVerification } from "./email-verification.entity.ts";

/** 32 random bytes, base64url: 43 characters. */
export const VERIFICATION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * Creates a verification token for the user's address and stores only its hash, replacing the user's older
 * unused tokens (their links stop working; used ones stay, so a link followed twice still answers 200).
 * Returns the token, which exists nowhere else: it goes into the mail and is forgotten.
 */
export async function issueVerification(
  em: EntityManager,
  entry: { userId: number; mailAddress: string; expiresAt: Date },
): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  await em.nativeDelete(EmailVerification, { userId: entry.userId, usedAt: null });
  em.create(EmailVerification, {
    userId: entry.userId,
    mailAddress: entry.mailAddress,
    tokenHash: hashToken(token),
    createdAt: new Date(),
    expiresAt: entry.expiresAt,
    usedAt: null,
  });
  await em.flush();
  return token;
}

/** The newest unused token's expiry for a user, if any (a re-send keeps the sign-up's deadline). */
export async function pendingExpiryOf(em: EntityManager, userId: number): Promise<Date | undefined> {
  const row = await em.findOne(
    EmailVerification,
    { userId, usedAt: null },
    { orderBy: { createdAt: "desc" } },
  );
  return row?.expiresAt;
}

/** The verification for this token and e-mail address (case-insensitive), or null. */
export async function findVerification(
  em: EntityManager,
  token: string,
  email: string,
): Promise<EmailVerification | null> {
  const row = await em.findOne(EmailVerification, { tokenHash: hashToken(token) });
  if (!row || row.mailAddress.toLowerCase() !== email.toLowerCase()) return null;
  return row;
}

/** Marks a token used; false when it already was (a concurrent click won). */
export async function markUsed(em: EntityManager, id: number, at: Date): Promise<boolean> {
  return (await em.nativeUpdate(EmailVerification, { id, usedAt: null }, { usedAt: at })) === 1;
}

export async function deleteVerificationsOf(em: EntityManager, userId: number): Promise<number> {
  return em.nativeDelete(EmailVerification, { userId });
}

/** Deletes verifications that expired before `before` (used or not). */
export async function pruneVerifications(em: EntityManager, before: Date): Promise<number> {
  return em.nativeDelete(EmailVerification, { expiresAt: { $lt: before } });
}

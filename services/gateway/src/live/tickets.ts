import { createHash, randomBytes } from "node:crypto";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";

/** How long a ticket may wait for its stream. */
export const TICKET_TTL_MS = 30_000;

/**
 * Tickets for browsers' EventSource, which cannot send an Authorization header: `POST /events/ticket`
 * trades the caller's token for a random ticket, good once within 30 s, so no JWT ever goes in a URL.
 * Redis keeps the token under the ticket's hash (a key listing shows no usable ticket); GETDEL makes it
 * single-use on every replica at once.
 */
export function createTickets(redis: Redis, prefix: string) {
  const keyOf = (ticket: string) =>
    `${prefix}live:ticket:${createHash("sha256").update(ticket).digest("hex")}`;
  return {
    async issue(token: string): Promise<string> {
      const ticket = randomBytes(32).toString("base64url");
      await redis.set(keyOf(ticket), token, "PX", TICKET_TTL_MS);
      return ticket;
    },
    /** The token the ticket was issued for; 401 when it is unknown, used or expired. */
    async redeem(ticket: string): Promise<string> {
      const token = /^[\w-]{43}$/.test(ticket) ? await redis.getdel(keyOf(ticket)) : null;
      if (token === null) {
        throw errors.unauthenticated(ErrorCode.TICKET_INVALID, "The ticket is unknown, used or expired.");
      }
      return token;
    },
  };
}
export type Tickets = ReturnType<typeof createTickets>;

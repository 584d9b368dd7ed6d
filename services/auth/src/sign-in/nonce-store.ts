import { randomInt } from "node:crypto";
import { ErrorCode, errors } from "@fundraise/protocol";
import type { Redis } from "ioredis";

export interface NonceStore {
  /** A fresh nonce for the address, replacing any earlier one; lives `ttlSeconds`. */
  issue(address: string): Promise<number>;
  /** Reads and deletes the address's nonce in one step (GETDEL): a nonce is used at most once. */
  take(address: string): Promise<number | undefined>;
}

// Nonces have at least 8 digits, the shortest nonce EIP-4361 allows, so one number serves both the legacy
// `LOGIN: <nonce>` text and a SIWE message; still a non-negative 32-bit int (the interface's int type).
const MIN_NONCE = 10_000_000;
const MAX_NONCE_EXCLUSIVE = 2 ** 31;

export const redisUnavailable = (cause: unknown) =>
  errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sign-in is unavailable right now; try again.", {
    cause,
  });

/** Nonces in Redis under `<prefix>nonce:<lower-case address>`, with a TTL (they may expire anyway). */
export function createNonceStore(redis: Redis, prefix: string, ttlSeconds: number): NonceStore {
  const key = (address: string) => `${prefix}nonce:${address.toLowerCase()}`;
  return {
    async issue(address) {
      const nonce = randomInt(MIN_NONCE, MAX_NONCE_EXCLUSIVE);
      try {
        await redis.set(key(address), String(nonce), "EX", ttlSeconds);
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      return nonce;
    },
    async take(address) {
      let value: string | null;
      try {
        value = await redis.getdel(key(address));
      } catch (cause) {
        throw redisUnavailable(cause);
      }
      if (value === null || !/^\d+$/.test(value)) return undefined;
      return Number(value);
    },
  };
}

import { randomFillSync } from "node:crypto";

/**
 * Time-ordered ids (RFC 9562 UUIDv7): the first 48 bits are the Unix time in milliseconds. Request ids are
 * made this way so that a journal reader can go straight to the moment a request started (a stream seek by
 * time) instead of scanning days of traffic for it (docs/adr/0034-debugging-from-the-bus.md).
 */

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
// Random bytes drawn in blocks, as crypto.randomUUID does: one system call per 512 ids, not per id.
const POOL = Buffer.allocUnsafe(10 * 512);
let used = POOL.length;

export function uuidv7(now: number = Date.now()): string {
  if (used + 10 > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const r = used;
  used += 10;
  const ms = Math.max(0, Math.floor(now));
  const high = Math.floor(ms / 2 ** 16);
  const low = ms % 2 ** 16;
  const b = POOL;
  return (
    HEX[(high >>> 24) & 0xff]! +
    HEX[(high >>> 16) & 0xff]! +
    HEX[(high >>> 8) & 0xff]! +
    HEX[high & 0xff]! +
    "-" +
    HEX[low >>> 8]! +
    HEX[low & 0xff]! +
    "-" +
    HEX[0x70 | (b[r]! & 0x0f)]! +
    HEX[b[r + 1]!]! +
    "-" +
    HEX[0x80 | (b[r + 2]! & 0x3f)]! +
    HEX[b[r + 3]!]! +
    "-" +
    HEX[b[r + 4]!]! +
    HEX[b[r + 5]!]! +
    HEX[b[r + 6]!]! +
    HEX[b[r + 7]!]! +
    HEX[b[r + 8]!]! +
    HEX[b[r + 9]!]!
  );
}

/** What a request id given by a client may be: anything else gets one of ours (gateway), or is refused (replay). */
export const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;

const V7 = /^([0-9a-f]{8})-?([0-9a-f]{4})-?7[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
/** A W3C trace id whose first 48 bits are a time, as the telemetry's id generator makes them. */
const TIMED_TRACE = /^([0-9a-f]{8})([0-9a-f]{4})7[0-9a-f]{3}[89ab][0-9a-f]{15}$/i;

/** The earliest time an id of ours can carry (this platform's ids are younger): older ones are random. */
const EARLIEST = Date.UTC(2024, 0, 1);

/**
 * The time (ms) a time-ordered id was made at, or undefined for an id that carries none (a client's own
 * request id, a random UUID). `trace` also accepts a 32-digit trace id made by `timedTraceId`.
 */
export function timeOfId(id: string, kind: "request" | "trace" = "request"): number | undefined {
  const match = (kind === "trace" ? TIMED_TRACE : V7).exec(id);
  if (!match) return undefined;
  const ms = Number.parseInt(`${match[1]}${match[2]}`, 16);
  // A random id looks like a time only by chance; one from before the platform or from the future is not one.
  if (ms < EARLIEST || ms > Date.now() + 24 * 3600_000) return undefined;
  return ms;
}

/** A W3C trace id (32 hex digits) led by the time in ms, as X-Ray's are: findable in the journal by time. */
export function timedTraceId(now: number = Date.now()): string {
  return uuidv7(now).replaceAll("-", "");
}

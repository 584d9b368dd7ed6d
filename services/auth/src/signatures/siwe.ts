import { SiweMessage as Eip4361Message } from "siwe";

/**
 * Sign-In with Ethereum (EIP-4361) messages. Parsing and writing are the `siwe` package's (its parser is
 * generated from the EIP's ABNF: a message that does not follow the grammar exactly, with its line order,
 * blank lines, field names and EIP-55 address, is refused, because what the wallet showed the user must be
 * exactly what we check). Only the text is used from it: its `verify` (signature recovery, EIP-1271 through
 * a provider of its own) is not, the signature is checked in `signature.ts` and `chain/chain.ts`. The checks
 * against this deployment are ours (`checkSiweMessage`).
 */
export interface SiweMessage {
  scheme: string | undefined;
  domain: string;
  /** EIP-55, as written in the message. */
  address: string;
  statement: string | undefined;
  uri: string;
  version: "1";
  chainId: number;
  nonce: string;
  issuedAt: Date;
  expirationTime: Date | undefined;
  notBefore: Date | undefined;
  requestId: string | undefined;
  resources: string[];
}

export class SiweParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SiweParseError";
  }
}

const HEADER_SUFFIX = " wants you to sign in with your Ethereum account:";

function date(value: string, field: string): Date {
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime())) throw new SiweParseError(`${field} is not a valid date-time`);
  return parsed;
}

/** The parser's first complaint, without the dump of its internal state that ends its error. */
function problemOf(error: unknown): string {
  const first = (error instanceof Error ? error.message : String(error)).split("\n", 1)[0] ?? "";
  return first === "" || first.startsWith("Invalid message: {")
    ? "does not follow the EIP-4361 grammar"
    : first;
}

/** Parses an EIP-4361 message; throws SiweParseError naming the first part that breaks the grammar. */
export function parseSiweMessage(text: string): SiweMessage {
  let m: Eip4361Message;
  try {
    m = new Eip4361Message(text);
  } catch (error) {
    throw new SiweParseError(problemOf(error));
  }
  // The grammar allows any number of digits; a chain id past 2^53 is nobody's.
  if (!Number.isSafeInteger(m.chainId)) throw new SiweParseError("invalid Chain ID");
  return {
    scheme: m.scheme,
    domain: m.domain,
    address: m.address,
    statement: m.statement,
    uri: m.uri,
    version: "1",
    chainId: m.chainId,
    nonce: m.nonce,
    issuedAt: date(m.issuedAt ?? "", "Issued At"),
    expirationTime: m.expirationTime === undefined ? undefined : date(m.expirationTime, "Expiration Time"),
    notBefore: m.notBefore === undefined ? undefined : date(m.notBefore, "Not Before"),
    requestId: m.requestId,
    resources: m.resources ?? [],
  };
}

export interface SiweExpectations {
  /** Host with optional port, as SIWE_DOMAIN (lower case). */
  domain: string;
  /** PUBLIC_BASE_URL: the URI must have its origin (scheme, host, port) and no userinfo. */
  baseUrl: string;
  chainId: number;
  /** The nonce GetNonce issued for this address, as a decimal string. */
  nonce: string;
  /** The address the caller claims (login) or the one the message must be for. */
  address: string;
  now: Date;
  /** Oldest accepted Issued At, as an age in seconds (the nonce lifetime). */
  maxAgeSeconds: number;
  clockSkewSeconds: number;
}

/** Which check failed; for logs only, never for the client (one message for every sign-in failure). */
export type SiweProblem =
  | "domain"
  | "scheme"
  | "uri"
  | "chain-id"
  | "nonce"
  | "issued-in-future"
  | "issued-too-long-ago"
  | "expired"
  | "not-yet-valid"
  | "address";

/** Checks a parsed message against what this deployment expects; null when every check passes. */
export function checkSiweMessage(message: SiweMessage, expected: SiweExpectations): SiweProblem | null {
  const base = new URL(expected.baseUrl);
  if (message.domain.toLowerCase() !== expected.domain.toLowerCase()) return "domain";
  if (message.scheme !== undefined && `${message.scheme.toLowerCase()}:` !== base.protocol) return "scheme";
  let target: URL;
  try {
    target = new URL(message.uri);
  } catch {
    return "uri";
  }
  // The resource signed in to is this deployment: the same origin (scheme, host and port; `javascript:`,
  // `ftp:` and other schemes have another or an opaque origin), and no userinfo (`http://evil@host` shows a
  // user a name that is not the site's).
  if (target.origin !== base.origin || target.username !== "" || target.password !== "") return "uri";
  if (message.chainId !== expected.chainId) return "chain-id";
  if (message.nonce !== expected.nonce) return "nonce";
  const now = expected.now.getTime();
  const skew = expected.clockSkewSeconds * 1000;
  const issuedAt = message.issuedAt.getTime();
  if (issuedAt > now + skew) return "issued-in-future";
  if (issuedAt < now - expected.maxAgeSeconds * 1000 - skew) return "issued-too-long-ago";
  if (message.expirationTime && message.expirationTime.getTime() <= now - skew) return "expired";
  if (message.notBefore && message.notBefore.getTime() > now + skew) return "not-yet-valid";
  if (message.address.toLowerCase() !== expected.address.toLowerCase()) return "address";
  return null;
}

/**
 * Writes a message in the EIP's layout (the `siwe` package's writer, which also parses what it wrote: a
 * field the grammar refuses throws); tests and clients use it, the service only parses.
 */
export function formatSiweMessage(fields: {
  scheme?: string;
  domain: string;
  address: string;
  statement?: string;
  uri: string;
  chainId: number;
  nonce: string;
  issuedAt: Date | string;
  expirationTime?: Date | string;
  notBefore?: Date | string;
  requestId?: string;
  resources?: string[];
}): string {
  const iso = (d: Date | string | undefined) => (d instanceof Date ? d.toISOString() : d);
  return new Eip4361Message({
    ...fields,
    version: "1",
    issuedAt: iso(fields.issuedAt),
    expirationTime: iso(fields.expirationTime),
    notBefore: iso(fields.notBefore),
    resources: fields.resources?.length ? fields.resources : undefined,
  }).prepareMessage();
}

/** True when the text looks like an EIP-4361 message (its first line), whether or not it parses. */
export function looksLikeSiwe(text: string): boolean {
  const firstLine = text.split("\n", 1)[0] ?? "";
  return firstLine.endsWith(HEADER_SUFFIX);
}

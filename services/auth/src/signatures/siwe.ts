import { getAddress } from "ethers";

/**
 * Sign-In with Ethereum (EIP-4361) messages, parsed by hand against the EIP's ABNF: a message that does
 * not follow the grammar exactly (line order, blank lines, field names) is refused, because what the
 * wallet showed the user must be exactly what we check.
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
// authority = [ userinfo "@" ] host [ ":" port ] (RFC 3986), kept to the characters those may hold.
const AUTHORITY =
  /^(?:[A-Za-z0-9\-._~%!$&'()*+,;=:]+@)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+)(?::\d{1,5})?$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
// statement = *( reserved / unreserved / " " ): no line breaks, printable ASCII.
const STATEMENT = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;= ]*$/;
const NONCE = /^[A-Za-z0-9]{8,}$/;
const CHAIN_ID = /^[0-9]{1,15}$/;
const REQUEST_ID = /^[A-Za-z0-9\-._~%!$&'()*+,;=:@]*$/;
// RFC 3339 date-time (ISO-8601 profile): full date, full time, fraction optional, zone Z or ±hh:mm.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

function dateTime(value: string, field: string): Date {
  if (!DATE_TIME.test(value)) throw new SiweParseError(`${field} is not an RFC 3339 date-time`);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new SiweParseError(`${field} is not a valid date-time`);
  return date;
}

function uri(value: string, field: string): string {
  if (value === "" || /\s/.test(value)) throw new SiweParseError(`${field} is not a URI`);
  try {
    new URL(value);
  } catch {
    throw new SiweParseError(`${field} is not a URI`);
  }
  return value;
}

/** Parses an EIP-4361 message; throws SiweParseError naming the first part that breaks the grammar. */
export function parseSiweMessage(text: string): SiweMessage {
  if (text.includes("\r")) throw new SiweParseError("lines must end with LF only");
  const lines = text.split("\n");
  let i = 0;
  const next = (): string | undefined => lines[i++];

  const header = next() ?? "";
  if (!header.endsWith(HEADER_SUFFIX)) throw new SiweParseError("the first line is not a SIWE header");
  let origin = header.slice(0, -HEADER_SUFFIX.length);
  let scheme: string | undefined;
  const schemeEnd = origin.indexOf("://");
  if (schemeEnd >= 0) {
    scheme = origin.slice(0, schemeEnd);
    if (!SCHEME.test(scheme)) throw new SiweParseError("invalid scheme");
    origin = origin.slice(schemeEnd + 3);
  }
  if (!AUTHORITY.test(origin)) throw new SiweParseError("invalid domain");

  const address = next() ?? "";
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new SiweParseError("invalid address");
  let checksummed: string;
  try {
    checksummed = getAddress(address);
  } catch {
    throw new SiweParseError("the address is not EIP-55 checksummed");
  }
  if (checksummed !== address) throw new SiweParseError("the address is not EIP-55 checksummed");

  if (next() !== "") throw new SiweParseError("a blank line must follow the address");
  let statement: string | undefined;
  const afterBlank = next();
  if (afterBlank === undefined) throw new SiweParseError("the message ends early");
  if (afterBlank !== "") {
    if (afterBlank.startsWith("URI: ")) {
      throw new SiweParseError("a blank line must precede the fields (two without a statement)");
    }
    if (!STATEMENT.test(afterBlank)) throw new SiweParseError("invalid statement");
    statement = afterBlank;
    if (next() !== "") throw new SiweParseError("a blank line must follow the statement");
  }

  const field = (name: string, optional = false): string | undefined => {
    const line = lines[i];
    const prefix = `${name}: `;
    if (line?.startsWith(prefix)) {
      i++;
      return line.slice(prefix.length);
    }
    if (optional) return undefined;
    throw new SiweParseError(`"${name}" expected`);
  };

  const uriValue = uri(field("URI") ?? "", "URI");
  const version = field("Version");
  if (version !== "1") throw new SiweParseError("Version must be 1");
  const chainIdText = field("Chain ID") ?? "";
  if (!CHAIN_ID.test(chainIdText)) throw new SiweParseError("invalid Chain ID");
  const nonce = field("Nonce") ?? "";
  if (!NONCE.test(nonce)) throw new SiweParseError("invalid Nonce (at least 8 letters or digits)");
  const issuedAt = dateTime(field("Issued At") ?? "", "Issued At");
  const expirationText = field("Expiration Time", true);
  const expirationTime =
    expirationText === undefined ? undefined : dateTime(expirationText, "Expiration Time");
  const notBeforeText = field("Not Before", true);
  const notBefore = notBeforeText === undefined ? undefined : dateTime(notBeforeText, "Not Before");
  const requestId = field("Request ID", true);
  if (requestId !== undefined && !REQUEST_ID.test(requestId)) throw new SiweParseError("invalid Request ID");
  const resources: string[] = [];
  if (lines[i] === "Resources:") {
    i++;
    while (i < lines.length && (lines[i] ?? "").startsWith("- ")) {
      resources.push(uri((lines[i] ?? "").slice(2), "resource"));
      i++;
    }
  }
  if (i !== lines.length) throw new SiweParseError(`unexpected line ${i + 1}`);

  return {
    scheme,
    domain: origin,
    address,
    statement,
    uri: uriValue,
    version: "1",
    chainId: Number(chainIdText),
    nonce,
    issuedAt,
    expirationTime,
    notBefore,
    requestId,
    resources,
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

/** Writes a message in the EIP's layout; tests and clients use it, the service only parses. */
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
  const iso = (d: Date | string) => (typeof d === "string" ? d : d.toISOString());
  const lines = [
    `${fields.scheme ? `${fields.scheme}://` : ""}${fields.domain}${HEADER_SUFFIX}`,
    fields.address,
    "",
    ...(fields.statement === undefined ? [] : [fields.statement]),
    "",
    `URI: ${fields.uri}`,
    "Version: 1",
    `Chain ID: ${fields.chainId}`,
    `Nonce: ${fields.nonce}`,
    `Issued At: ${iso(fields.issuedAt)}`,
  ];
  if (fields.expirationTime !== undefined) lines.push(`Expiration Time: ${iso(fields.expirationTime)}`);
  if (fields.notBefore !== undefined) lines.push(`Not Before: ${iso(fields.notBefore)}`);
  if (fields.requestId !== undefined) lines.push(`Request ID: ${fields.requestId}`);
  if (fields.resources && fields.resources.length > 0) {
    lines.push("Resources:", ...fields.resources.map((r) => `- ${r}`));
  }
  return lines.join("\n");
}

/** True when the text looks like an EIP-4361 message (its first line), whether or not it parses. */
export function looksLikeSiwe(text: string): boolean {
  const firstLine = text.split("\n", 1)[0] ?? "";
  return firstLine.endsWith(HEADER_SUFFIX);
}

import { createHmac, createSecretKey } from "node:crypto";
import type { Pseudonymize } from "./personal-schema.ts";

/**
 * The personal-data policy of the protocol, beside its schemas. A schema field that holds personal data is
 * marked with `personal(kind, schema)` (personal-schema.ts); the journal, which keeps messages for days,
 * replaces every such value with a keyed pseudonym (`redactorOf`, redaction.ts) and, as a safety net for free
 * text no schema describes, every e-mail address (`scrubEmails`).
 */
export {
  PERSONAL,
  PERSONAL_KINDS,
  type PersonalKind,
  type Pseudonymize,
  personal,
  personalKindOf,
} from "./personal-schema.ts";
export { personalPaths, type Redacted, type Redactor, redactorOf } from "./redaction.ts";

/**
 * How many pseudonyms a pseudonymizer remembers (the oldest go first): an HMAC costs about 5 µs, and the
 * journal meets the same people again and again (a list of 1,000 users holds 3,000 personal values).
 */
const PSEUDONYMS_KEPT = 10_000;

/**
 * A keyed pseudonymizer: email, ip and name become `[<kind>:<first 16 chars of base64url(HMAC-SHA256(key,
 * kind + ":" + normalized value))>]` (email normalized: trimmed, lower-cased; others trimmed), so one person
 * reads the same across entries without being readable; nonce becomes `[nonce]` (a secret: no hash).
 */
export function pseudonymizer(key: string | Uint8Array): Pseudonymize {
  if (key.length === 0)
    throw new Error("A pseudonymizer needs a key: without one a pseudonym is a plain hash.");
  // A key object holds a copy: the caller's buffer may change later, the pseudonyms must not.
  const secret = createSecretKey(typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key));
  const kept = new Map<string, string>();
  return (kind, value) => {
    if (kind === "nonce") return "[nonce]";
    const input = `${kind}:${kind === "email" ? value.trim().toLowerCase() : value.trim()}`;
    let pseudonym = kept.get(input);
    if (pseudonym === undefined) {
      const digest = createHmac("sha256", secret).update(input, "utf8").digest("base64url");
      pseudonym = `[${kind}:${digest.slice(0, 16)}]`;
      if (kept.size >= PSEUDONYMS_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(input, pseudonym);
    }
    return pseudonym;
  };
}

// An address's domain after the "@": dot-separated labels of at most 63 characters, at least two labels.
// Bounded repetitions keep the match linear in the text, whatever the text.
const DOMAIN =
  /[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+/y;

/** The characters of an address's local part as they appear in running text (quotes and spaces end it). */
function isLocalChar(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x25 || // %
    code === 0x2b || // +
    code === 0x2d // -
  );
}

/**
 * Safety net for free text (error messages, anything unannotated): replaces every e-mail-looking substring
 * with pseudonymize("email", match). Fast path: returns the same string when it has no "@".
 * Each "@" is read outwards (the local part backwards, the domain forwards), so the time is linear in the
 * text: a long run of letters before an "@" costs no backtracking.
 */
export function scrubEmails(text: string, pseudonymize: Pseudonymize): string {
  let at = text.indexOf("@");
  if (at === -1) return text;
  let out = "";
  let copied = 0;
  while (at !== -1) {
    let start = at;
    while (start > copied && isLocalChar(text.charCodeAt(start - 1))) start--;
    DOMAIN.lastIndex = at + 1;
    const domain = start < at ? DOMAIN.exec(text) : null;
    if (domain) {
      const end = at + 1 + domain[0].length;
      out += text.slice(copied, start) + pseudonymize("email", text.slice(start, end));
      copied = end;
    }
    at = text.indexOf("@", Math.max(at + 1, copied));
  }
  return copied === 0 ? text : out + text.slice(copied);
}

import type { TSchema } from "typebox";

/**
 * The keyword that marks a schema's value as personal data, beside the schema so that every message reusing
 * the schema inherits the policy. The journal (docs/adr/0004) replaces such values before it keeps a message.
 */
export const PERSONAL = "x-personal";

/**
 * What a personal value is: an e-mail address, a client's IP address, a person's name or surname, a sign-in
 * nonce. Usernames and wallet addresses are not personal here: they are the platform's public identifiers.
 */
export const PERSONAL_KINDS = ["email", "ip", "name", "nonce"] as const;
export type PersonalKind = (typeof PERSONAL_KINDS)[number];

/** Replaces one personal value for the journal. */
export type Pseudonymize = (kind: PersonalKind, value: string) => string;

/**
 * The schema with `x-personal: kind` added (a shallow copy; the given schema is not changed). Types stay the
 * same.
 *
 * The keyword is a hidden property, the way TypeBox keeps its own (`~kind`, `~optional`): it is read by
 * property access, but JSON and JSON-Schema tools do not see it. The gateway's Ajv runs in strict mode, which
 * refuses a schema with a keyword it does not know, so a visible one would change how bodies are validated.
 */
export function personal<S extends TSchema>(kind: PersonalKind, schema: S): S {
  // Every own property, hidden ones too: TypeBox's modifiers (`~optional`) must survive the copy.
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(schema)) as S;
  Object.defineProperty(copy, PERSONAL, {
    value: kind,
    enumerable: false,
    writable: false,
    configurable: true,
  });
  return copy;
}

const KINDS: ReadonlySet<string> = new Set(PERSONAL_KINDS);

/**
 * The personal kind a schema declares (hidden by `personal()` or written out in a plain JSON schema), or
 * undefined. An unknown kind is a mistake in the protocol: it throws, where the schema is first compiled.
 */
export function personalKindOf(schema: unknown): PersonalKind | undefined {
  if (typeof schema !== "object" || schema === null || !Object.hasOwn(schema, PERSONAL)) return undefined;
  const kind = (schema as Record<string, unknown>)[PERSONAL];
  if (typeof kind === "string" && KINDS.has(kind)) return kind as PersonalKind;
  throw new Error(`${PERSONAL} must be one of ${PERSONAL_KINDS.join(", ")}; the schema says ${String(kind)}`);
}

/**
 * What people type into the platform: names, usernames, e-mail addresses (rules.md §2.7, and §7.8 "Names
 * are printable"). One definition, used by the auth service (sign-up input) and the users service (sign-up
 * and profile updates), so both refuse exactly the same values.
 */

export const NAME_MAX = 100;
export const USERNAME_MAX = 32;
export const EMAIL_MAX = 254;
export const USERNAME_PATTERN = /^[A-Za-z0-9_.-]{3,32}$/;
// The HTML standard's e-mail syntax (what browsers accept for type=email), with at least one dot in the
// domain: one @, no spaces, a local part of allowed characters, a domain of dot-separated labels.
const EMAIL_PATTERN =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/**
 * Never accepted in a name: control characters (Cc), format characters (Cf: the bidi embeddings,
 * overrides and isolates U+202A-202E and U+2066-2069, zero-width space and joiners U+200B-200D, word
 * joiner U+2060, BOM U+FEFF, soft hyphen, ...), lone surrogates (Cs), and the line and paragraph
 * separators U+2028/2029 (Zl, Zp). They reorder or hide text in mail, logs and other users' screens.
 */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

/**
 * Trimmed from both ends: spaces of any kind, tab, CR and LF (what a form or a paste leaves around a
 * value). Unlike `String.prototype.trim`, a BOM or a line separator at an edge is not dropped: it is refused.
 */
const EDGES = /^[\p{Zs}\t\n\r]+|[\p{Zs}\t\n\r]+$/gu;

/**
 * What renders as nothing: white space, default-ignorable code points (zero-width characters, joiners,
 * variation selectors, Hangul fillers, ...), the forbidden characters, and the blank Braille pattern.
 * A value made only of these is missing.
 */
const INVISIBLE = /[\s\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u2800]/gu;

/** The value without surrounding white space (see EDGES). */
export function trimText(value: string): string {
  return value.replace(EDGES, "");
}

/** True when nothing visible is left: empty, white space only, or invisible characters only. */
export function isBlankText(value: string): boolean {
  return value.replace(INVISIBLE, "") === "";
}

/** True when the value holds a control, format, surrogate or line/paragraph-separator character. */
export function hasUnprintable(value: string): boolean {
  return FORBIDDEN.test(value);
}

export function isEmailAddress(value: string): boolean {
  return value.length <= EMAIL_MAX && EMAIL_PATTERN.test(value);
}

export function isUsername(value: string): boolean {
  return USERNAME_PATTERN.test(value);
}

export const TEXT_PROBLEMS = {
  required: "is required",
  unprintable: "must not contain control, invisible (zero-width, bidi) or line-separator characters",
  username: "must be 3-32 letters, digits, '_', '.' or '-'",
  email: "must be a valid e-mail address",
  tooLong: (max: number) => `must be at most ${max} characters`,
} as const;

/** Why a trimmed name or surname is not acceptable, or undefined when it is. */
export function nameProblem(value: string, max = NAME_MAX): string | undefined {
  if (isBlankText(value)) return TEXT_PROBLEMS.required;
  if (value.length > max) return TEXT_PROBLEMS.tooLong(max);
  if (hasUnprintable(value)) return TEXT_PROBLEMS.unprintable;
  return undefined;
}

/** Why a trimmed username is not acceptable, or undefined when it is. */
export function usernameProblem(value: string): string | undefined {
  if (isBlankText(value)) return TEXT_PROBLEMS.required;
  return isUsername(value) ? undefined : TEXT_PROBLEMS.username;
}

/** Why a trimmed e-mail address is not acceptable, or undefined when it is. */
export function emailProblem(value: string): string | undefined {
  if (isBlankText(value)) return TEXT_PROBLEMS.required;
  return isEmailAddress(value) ? undefined : TEXT_PROBLEMS.email;
}

/** The sign-up and profile fields, each with its check. */
export const PROFILE_FIELD_PROBLEMS = {
  name: (value: string) => nameProblem(value),
  surname: (value: string) => nameProblem(value),
  username: usernameProblem,
  mailAddress: emailProblem,
} as const;

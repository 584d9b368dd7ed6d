import {
  EMAIL_MAX,
  ErrorCode,
  errors,
  isEmailAddress,
  isUsername,
  NAME_MAX,
  PROFILE_FIELD_PROBLEMS,
  trimText,
  USER_ROLES,
  USERNAME_PATTERN,
  type UserRole,
} from "@fundraise/protocol";

/**
 * Pure checks of user input (rules.md §2.7, §3.2, §7.8), shared by register and update. The text rules
 * (names printable, username and e-mail syntax) are the protocol's (`packages/protocol/src/text.ts`), the
 * same the auth service applies at sign-up.
 */

export { EMAIL_MAX, NAME_MAX, USERNAME_PATTERN };

export interface Profile {
  name: string;
  surname: string;
  username: string;
  mailAddress: string;
}

export function isValidEmail(value: string): boolean {
  return isEmailAddress(value);
}

export function isValidUsername(value: string): boolean {
  return isUsername(value);
}

/** Case-insensitive equality, as addresses, usernames and e-mails are compared. */
export function sameText(a: string | null | undefined, b: string | null | undefined): boolean {
  return a != null && b != null && a.toLowerCase() === b.toLowerCase();
}

/** The role named case-insensitively ("whitelist" → "Whitelist"), or undefined. */
export function parseRole(value: string): UserRole | undefined {
  return USER_ROLES.find((role) => sameText(role, value.trim()));
}

/**
 * An address as EIP-55, or undefined: the protocol's one rule (`packages/protocol/src/address.ts`), the
 * same as the auth service's and the gateway's. Lower- or upper-case digits are checksummed; mixed case
 * must carry a valid EIP-55 checksum (a wrong one is a typo, refused).
 */
export { parseAddress } from "@fundraise/protocol";

function invalid(field: keyof Profile, message: string): never {
  throw errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid ${field}: ${message}.`, {
    details: [{ path: `/${field}`, message }],
  });
}

const checks: Record<keyof Profile, (value: string) => string | undefined> = PROFILE_FIELD_PROBLEMS;

/**
 * Trims the given fields and checks each (null or absent: left out, meaning "unchanged"). Throws a
 * `validation` error naming the first bad field.
 */
export function validateProfile(
  fields: {
    [K in keyof Profile]?: string | null | undefined;
  },
): Partial<Profile> {
  const out: Partial<Profile> = {};
  for (const field of ["name", "surname", "username", "mailAddress"] as const) {
    const raw = fields[field];
    if (raw == null) continue;
    const value = trimText(raw);
    const problem = checks[field](value);
    if (problem) invalid(field, problem);
    out[field] = value;
  }
  return out;
}

/** A complete profile (sign-up): every field required. */
export function validateNewProfile(fields: Profile): Profile {
  const out = validateProfile(fields);
  return { name: out.name!, surname: out.surname!, username: out.username!, mailAddress: out.mailAddress! };
}

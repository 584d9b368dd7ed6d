import {
  ADDRESS_PROBLEM,
  ErrorCode,
  errors,
  type Issue,
  PROFILE_FIELD_PROBLEMS,
  parseAddress,
  trimText,
} from "@fundraise/protocol";
import { isSignatureHex } from "../signatures/signature.ts";

/** One 400 naming every field that is wrong, with the issues in `details` (as the bus reports schema failures). */
export function invalidFields(issues: Issue[]) {
  const summary = issues.map((i) => `${i.path.replace(/^\//, "")} ${i.message}`).join("; ");
  return errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid input: ${summary}.`, { details: issues });
}

const issue = (field: string, message: string): Issue => ({ path: `/${field}`, message });

/** An address as the client sent it, as EIP-55 (the protocol's one rule); 400 naming the field otherwise. */
export function requireAddress(value: string | null | undefined, field = "address"): string {
  const trimmed = value?.trim() ?? "";
  if (trimmed === "") throw invalidFields([issue(field, "is required")]);
  const address = parseAddress(trimmed);
  if (!address) throw invalidFields([issue(field, ADDRESS_PROBLEM)]);
  return address;
}

export function requireSignature(value: string | null | undefined): string {
  const trimmed = value?.trim() ?? "";
  if (trimmed === "") throw invalidFields([issue("signedMessage", "is required")]);
  if (!isSignatureHex(trimmed))
    throw invalidFields([issue("signedMessage", "must be a 0x-prefixed hex signature")]);
  return trimmed;
}

/** The optional signed text: null, empty or blank means "not sent" (the legacy client never sends it). */
export function optionalMessage(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined || value.trim() === "") return undefined;
  return value;
}

export interface RegistrationFields {
  name: string;
  surname: string;
  username: string;
  mailAddress: string;
}

/**
 * Trims and checks the sign-up fields (names printable, rules.md §7.8: no control, bidi, zero-width or
 * line-separator characters, and a name of invisible characters only is missing); one 400 naming every
 * bad field. The same checks as the users service's (both use the protocol's text rules).
 */
export function validateRegistration(input: {
  name: string | null;
  surname: string | null;
  username: string | null;
  mailAddress: string | null;
}): RegistrationFields {
  const issues: Issue[] = [];
  const out = {} as RegistrationFields;
  for (const field of ["name", "surname", "username", "mailAddress"] as const) {
    const value = trimText(input[field] ?? "");
    const problem = PROFILE_FIELD_PROBLEMS[field](value);
    if (problem !== undefined) issues.push(issue(field, problem));
    out[field] = value;
  }
  if (issues.length > 0) throw invalidFields(issues);
  return out;
}

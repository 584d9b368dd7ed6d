import { ErrorCode, errors, type Issue } from "@fundraise/protocol";
import { isSignatureHex, normalizeAddress } from "../signatures/signature.ts";

/** One 400 naming every field that is wrong, with the issues in `details` (as the bus reports schema failures). */
export function invalidFields(issues: Issue[]) {
  const summary = issues.map((i) => `${i.path.replace(/^\//, "")} ${i.message}`).join("; ");
  return errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid input: ${summary}.`, { details: issues });
}

const issue = (field: string, message: string): Issue => ({ path: `/${field}`, message });

/** An address as the client sent it, as EIP-55; 400 naming the field otherwise. */
export function requireAddress(value: string | null | undefined, field = "address"): string {
  const trimmed = value?.trim() ?? "";
  if (trimmed === "") throw invalidFields([issue(field, "is required")]);
  const address = normalizeAddress(trimmed);
  if (!address)
    throw invalidFields([
      issue(field, "must be an EVM address (0x and 40 hex digits, EIP-55 if mixed case)"),
    ]);
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

export const USERNAME = /^[A-Za-z0-9_.-]{3,32}$/;
// A practical address check (the WHATWG `type=email` rule plus a dot in the domain): one @, no spaces,
// a local part of allowed characters, a domain of dot-separated labels.
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
// Control characters have no place in a name and break mail and logs.
const CONTROL = /\p{Cc}/u;

export function isEmailAddress(value: string): boolean {
  return value.length <= 254 && EMAIL.test(value);
}

export interface RegistrationFields {
  name: string;
  surname: string;
  username: string;
  mailAddress: string;
}

/** Trims and checks the sign-up fields; one 400 naming every bad field. */
export function validateRegistration(input: {
  name: string | null;
  surname: string | null;
  username: string | null;
  mailAddress: string | null;
}): RegistrationFields {
  const issues: Issue[] = [];
  /** The trimmed value, or "" after recording why it is wrong (one issue per field). */
  const text = (field: keyof RegistrationFields, max: number): string => {
    const value = input[field]?.trim() ?? "";
    const problem =
      value === ""
        ? "is required"
        : value.length > max
          ? `must be at most ${max} characters`
          : CONTROL.test(value)
            ? "must not contain control characters"
            : undefined;
    if (problem === undefined) return value;
    issues.push(issue(field, problem));
    return "";
  };
  const name = text("name", 100);
  const surname = text("surname", 100);
  const username = text("username", 32);
  if (username !== "" && !USERNAME.test(username)) {
    issues.push(issue("username", "must be 3-32 letters, digits, '_', '.' or '-'"));
  }
  const mailAddress = text("mailAddress", 254);
  if (mailAddress !== "" && !isEmailAddress(mailAddress)) {
    issues.push(issue("mailAddress", "must be a valid e-mail address"));
  }
  if (issues.length > 0) throw invalidFields(issues);
  return { name, surname, username, mailAddress };
}

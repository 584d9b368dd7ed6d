import { ErrorCode, errors, rolesInWords, type UserRole } from "@fundraise/protocol";

/** The users service's client-facing failures, one place for codes and wording. */
export const UserErrors = {
  notFound: (message = "The user does not exist.") => errors.notFound(ErrorCode.USER_NOT_FOUND, message),
  addressTaken: () =>
    errors.conflict(ErrorCode.USER_ADDRESS_TAKEN, "A user with this address is already registered.", {
      details: { field: "address" },
    }),
  emailTaken: () =>
    errors.conflict(ErrorCode.USER_EMAIL_TAKEN, "This e-mail address is already in use.", {
      details: { field: "mailAddress" },
    }),
  usernameTaken: () =>
    errors.conflict(ErrorCode.USER_USERNAME_TAKEN, "This username is already taken.", {
      details: { field: "username" },
    }),
  ownsProject: () =>
    errors.conflict(
      ErrorCode.USER_OWNS_PROJECT,
      "The user owns a project; delete the project or hand it over first.",
    ),
  lastAdmin: () => errors.conflict(ErrorCode.USER_LAST_ADMIN, "The last Admin cannot be deleted."),
  selfDelete: () =>
    errors.conflict(
      ErrorCode.USER_SELF_ACTION,
      "An admin cannot delete itself here; use DELETE /user/delete.",
    ),
  selfRole: () => errors.conflict(ErrorCode.USER_SELF_ACTION, "An admin cannot change its own role."),
  adminOnly: () => errors.forbidden(ErrorCode.ROLE_FORBIDDEN, "Only an Admin may do this."),
  /** A role the RPC does not admit (access.ts). */
  roleOnly: (roles: readonly UserRole[]) =>
    errors.forbidden(ErrorCode.ROLE_FORBIDDEN, `Only ${rolesInWords(roles)} may do this.`),
  blacklisted: () =>
    errors.forbidden(
      ErrorCode.ROLE_FORBIDDEN,
      "Blacklisted users have read-only access; they may only delete their account.",
    ),
  sessionsPending: (cause: unknown) =>
    errors.unavailable(
      ErrorCode.SERVICE_UNAVAILABLE,
      "The change is saved, but it could not reach the user's sessions and projects yet; it takes effect " +
        "within moments. Repeat the request to confirm.",
      { cause },
    ),
  invalidRole: (role: string) =>
    errors.validation(
      ErrorCode.VALIDATION_FAILED,
      `Invalid role "${role.slice(0, 32)}": use Admin, Whitelist, Viewer, Base or Blacklist.`,
      { details: [{ path: "/role", message: "must be Admin, Whitelist, Viewer, Base or Blacklist" }] },
    ),
  invalidPendingUntil: () =>
    errors.validation(ErrorCode.VALIDATION_FAILED, "Invalid pendingUntil: use an ISO-8601 date-time.", {
      details: [{ path: "/pendingUntil", message: "must be an ISO-8601 date-time" }],
    }),
  invalidAddress: () =>
    errors.validation(ErrorCode.VALIDATION_FAILED, "Invalid address: use 0x and 40 hex digits.", {
      details: [{ path: "/address", message: "must be an EVM address (0x + 40 hex digits)" }],
    }),
  // No dedicated code exists yet (a USER_EMAIL_CHANGED would name it); the link no longer matches the account's e-mail.
  emailChangedSinceLink: () =>
    errors.conflict(
      ErrorCode.VERIFICATION_TOKEN_INVALID,
      "The e-mail address changed since this link was sent; follow the link sent to the new address.",
    ),
} as const;

/** Which unique index a violation hit → the conflict the client sees (for translateDbError). */
export function conflictOfConstraint(
  constraint: string | undefined,
): { code: string; message: string } | undefined {
  const error =
    constraint === "user_address_unique"
      ? UserErrors.addressTaken()
      : constraint === "user_mail_address_unique"
        ? UserErrors.emailTaken()
        : constraint === "user_username_unique"
          ? UserErrors.usernameTaken()
          : undefined;
  return error && { code: error.code, message: error.message };
}

import { ErrorCode, errors } from "@fundraise/protocol";

/** The projects service's client-facing failures, one place for codes and wording. */
export const ProjectErrors = {
  notFound: () => errors.notFound(ErrorCode.PROJECT_NOT_FOUND, "The project does not exist."),
  nameTaken: () =>
    errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "A project with this name already exists; pick another.", {
      details: { field: "projectName" },
    }),
  fileTaken: () =>
    errors.conflict(
      ErrorCode.PROJECT_FILE_TAKEN,
      "A project with the same file (and image) already exists.",
      {
        details: { field: "fileHex" },
      },
    ),
  auctionExists: (what: string) =>
    errors.conflict(ErrorCode.PROJECT_AUCTION_EXISTS, `The project's auction is already created: ${what}.`),
  reviewersBusy: (max: number) =>
    errors.unavailable(
      ErrorCode.PROJECT_REVIEW_QUEUE_FULL,
      `The reviewers are busy: ${max} projects are waiting for a viewer. Try again later.`,
    ),
  reviewShareFull: (share: number) =>
    errors.rateLimited(
      ErrorCode.PROJECT_REVIEW_SHARE_FULL,
      `You already have ${share} projects waiting for a viewer; propose more once one is reviewed.`,
    ),
  blacklisted: () =>
    errors.forbidden(
      ErrorCode.ROLE_FORBIDDEN,
      "Blacklisted users have read-only access: they may decline invitations and leave projects only.",
    ),
  accountGone: () => errors.unauthenticated(ErrorCode.TOKEN_REVOKED, "This account no longer exists."),
  selfReview: () =>
    errors.forbidden(
      ErrorCode.PROJECT_SELF_REVIEW,
      "Reviewers cannot review a project they are a member of.",
    ),
  alreadyReviewed: () =>
    errors.conflict(ErrorCode.PROJECT_ALREADY_REVIEWED, "A viewer already accepted this project."),
  /** Retryable: the gateway pins the content again and writes again (content-release.ts). */
  contentReleased: (details: { fileHash: string; version: number; waitMs: number }) =>
    errors.unavailable(
      ErrorCode.CONTENT_RELEASED,
      "The file was being removed from storage as this write arrived; send it again.",
      { details },
    ),
  pinStale: (maxAgeMs: number) =>
    errors.unavailable(
      ErrorCode.CONTENT_PIN_STALE,
      `The file was stored more than ${maxAgeMs / 60_000} minutes before this write reached the projects service; send it again.`,
    ),
  roleForbidden: (message: string) => errors.forbidden(ErrorCode.ROLE_FORBIDDEN, message),
  notMember: (message = "Only the project's members may do this.") =>
    errors.forbidden(ErrorCode.PROJECT_NOT_MEMBER, message),
  invalid: (path: string, message: string) =>
    errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid ${path.slice(1)}: ${message}.`, {
      details: [{ path, message }],
    }),
  // Memberships
  invitationExists: () =>
    errors.conflict(
      ErrorCode.INVITATION_EXISTS,
      "The user is already a member of the project or invited to it.",
    ),
  invitationNotFound: () =>
    errors.notFound(ErrorCode.INVITATION_NOT_FOUND, "You have no pending invitation to this project."),
  membershipNotFound: () =>
    errors.notFound(
      ErrorCode.MEMBERSHIP_NOT_FOUND,
      "The user is neither a member of the project nor invited.",
    ),
  userNotFound: () => errors.notFound(ErrorCode.USER_NOT_FOUND, "No user has this username."),
  selfInvite: () => errors.validation(ErrorCode.USER_SELF_ACTION, "You cannot invite yourself."),
  ownerStays: (message: string) => errors.conflict(ErrorCode.MEMBERSHIP_OWNER, message),
  // Users
  fenceTooLate: () =>
    errors.timeout(
      ErrorCode.RPC_TIMEOUT,
      "The user's writes did not finish in time to delete the account; try again.",
    ),
  ownerCannotGo: () =>
    errors.conflict(
      ErrorCode.USER_OWNS_PROJECT,
      "The user owns a project; delete the project or hand it over first.",
    ),
} as const;

/**
 * Which unique index a violation hit → the conflict the client sees (for translateDbError): a write that
 * lost a race for a name, a file or a membership to a concurrent one that committed first. Every unique
 * index of the schema is here but `rating_project_user_unique`: ratings are written with `on conflict do
 * update` (a second rating replaces the first), so that index never refuses a write.
 */
export function conflictOfConstraint(
  constraint: string | undefined,
): { code: string; message: string } | undefined {
  const error =
    constraint === "project_name_unique"
      ? ProjectErrors.nameTaken()
      : constraint === "project_file_hash_unique"
        ? ProjectErrors.fileTaken()
        : constraint === "permission_project_user_unique"
          ? ProjectErrors.invitationExists()
          : constraint === "permission_one_owner"
            ? ProjectErrors.ownerStays("The project has an Owner already.")
            : undefined;
  return error && { code: error.code, message: error.message };
}

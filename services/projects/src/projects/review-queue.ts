import type { Project } from "./project.entity.ts";

/**
 * The review queue: the projects waiting for a viewer, Pending and not yet viewer-accepted (an Add or a
 * new file joins it, under its caps). The rule once, as the ORM's filter; below, the same as SQL and as a
 * test of a project in hand.
 */
export const AWAITING_REVIEW = { status: "Pending", viewerAccepted: false } as const;

/** AWAITING_REVIEW over the project table, as the queue's partial indexes state it (their predicate). */
export const AWAITING_REVIEW_SQL = "status = 'Pending' and not viewer_accepted";

export const isAwaitingReview = (project: Pick<Project, "status" | "viewerAccepted">): boolean =>
  project.status === AWAITING_REVIEW.status && project.viewerAccepted === AWAITING_REVIEW.viewerAccepted;

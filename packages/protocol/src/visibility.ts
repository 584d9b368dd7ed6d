import type { Caller } from "./common.ts";
import { isReviewer } from "./roles.ts";

/**
 * Who sees which project (rules.md §4.2), stated once for every reader: Admin and Viewer every project;
 * everyone else the projects they belong to (a permission row, accepted or invited) plus the open ones:
 * viewer-accepted, and Approved too unless the caller is Whitelist (anonymous callers included). The
 * projects service's single reads, lists (its repository turns `open` and `memberId` into a query) and
 * hot-read cache, and the gateway's event stream (per subscriber, per message) all read it here.
 */
export type Scope =
  | { all: true }
  | {
      all: false;
      /** The values a project's fields must have to be open to the caller (a query's filter as it is). */
      open: { viewerAccepted?: boolean; status?: string };
      /** The caller whose memberships count too; null when anonymous. */
      memberId: number | null;
    };

/** The fields of a project the rule reads. */
export interface VisibilityFields {
  viewerAccepted: boolean;
  status: string;
}

export function scopeOf(caller: Caller | null): Scope {
  if (caller && isReviewer(caller.role)) return { all: true };
  const open =
    caller?.role === "Whitelist" ? { viewerAccepted: true } : { viewerAccepted: true, status: "Approved" };
  return { all: false, open, memberId: caller?.userId ?? null };
}

/** The rule for one project in a scope, given whether the caller has a permission row on it. */
export function inScope(scope: Scope, project: VisibilityFields, isMember: boolean): boolean {
  if (scope.all || isMember) return true;
  return (Object.keys(scope.open) as (keyof VisibilityFields)[]).every((f) => project[f] === scope.open[f]);
}

/**
 * Whether `caller` (null: anonymous) sees `project`, given whether it has a permission row on it
 * (accepted or pending). Pure: a caller of the rule brings what it read.
 */
export const visibleTo = (caller: Caller | null, project: VisibilityFields, isMember: boolean): boolean =>
  inScope(scopeOf(caller), project, isMember);

/**
 * The name of the list every caller of this scope shares (the hot-read cache's key), or null when the list
 * depends on the caller's memberships.
 */
export function sharedListOf(scope: Scope): string | null {
  if (scope.all) return "all";
  return scope.memberId === null ? `open:${JSON.stringify(scope.open)}` : null;
}

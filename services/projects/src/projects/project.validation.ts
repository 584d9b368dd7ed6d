import {
  hasUnprintable,
  nameProblem,
  type PermissionRole,
  TEXT_PROBLEMS,
  trimText,
} from "@fundraise/protocol";
import { ProjectErrors } from "./project.errors.ts";

/** Longest markdown accepted (characters); the route's body limit bounds the bytes. */
export const MAX_MARKDOWN = 200_000;
export const MAX_TOP = 100;

/** A project name: trimmed, 1-200 printable characters (the rule of user names, longer). */
export function parseName(input: string): string {
  const name = trimText(input);
  const problem = nameProblem(name, 200);
  if (problem) throw ProjectErrors.invalid("/projectName", problem);
  return name;
}

export function parseMarkdown(input: string): string {
  if (input.length > MAX_MARKDOWN) {
    throw ProjectErrors.invalid("/markDown", `must be at most ${MAX_MARKDOWN} characters`);
  }
  return parseText("/markDown", input);
}

/** Free text is stored as given, except the NUL character, which PostgreSQL's text cannot hold. */
export function parseText(path: string, input: string): string {
  if (input.includes("\u0000")) throw ProjectErrors.invalid(path, "must not contain the NUL character");
  return input;
}

/**
 * A username naming a user (invite, remove): trimmed, undefined when none is given. A name holding a
 * control or invisible character belongs to no account (rules.md §7.8) and is refused before the users
 * service is asked: the NUL character cannot even reach PostgreSQL's text.
 */
export function parseUsername(input: string | null | undefined): string | undefined {
  const username = input?.trim();
  if (!username) return undefined;
  if (hasUnprintable(username)) throw ProjectErrors.invalid("/username", TEXT_PROBLEMS.unprintable);
  return username;
}

/** A rating: a finite number in [0, 5]. */
export function parseRating(value: number): number {
  if (!Number.isFinite(value) || value < 0 || value > 5) {
    throw ProjectErrors.invalid("/rating", "must be a number from 0 to 5");
  }
  return value;
}

/** The roles that may be invited (the Owner is whoever added the project). */
export function parseInvitedRole(role: string | undefined): PermissionRole {
  const wanted = role ?? "Editor";
  if (wanted === "Co-Owner" || wanted === "Editor") return wanted;
  throw ProjectErrors.invalid("/role", "must be Co-Owner or Editor");
}

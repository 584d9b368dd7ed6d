import type { SessionChange } from "@fundraise/protocol";
import { UserErrors } from "./user.errors.ts";
import type { ApplySession, OpContext, ProjectFence } from "./user.ports.ts";

/** Tries of a step after a commit before a 503, and the pause before the second (then twice as long). */
const ATTEMPTS = 3;
const RETRY_MS = 150;

export type InForce = (change: SessionChange, ctx: OpContext) => Promise<void>;

/**
 * What other services must hold of a committed change before it answers (rules.md §8.2, "at once"): the
 * session always; the projects service's rows of a deleted user. A few tries each within the caller's
 * deadline; if one cannot be reached, 503 (the change is saved; its event brings it there later, and
 * repeating an updaterole confirms it).
 */
export function createInForce(deps: {
  sessions: ApplySession;
  projects: Pick<ProjectFence, "removeRows">;
}): InForce {
  async function retried(step: () => Promise<void>, userId: number, ctx: OpContext): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await step();
      } catch (cause) {
        if (attempt >= ATTEMPTS) throw UserErrors.sessionsPending(cause);
        ctx.log.warn({ err: cause, userId, attempt }, "a committed change not applied elsewhere yet");
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS * attempt));
      }
    }
  }

  return async (change, ctx) => {
    const steps = [() => deps.sessions(change, ctx)];
    if (change.deleted) steps.push(() => deps.projects.removeRows(change.userId, ctx));
    await Promise.all(steps.map((step) => retried(step, change.userId, ctx)));
  };
}

import { announce, audienceOf } from "./announce.ts";
import { ProjectErrors } from "./project.errors.ts";
import type { OpContext, UserDirectory } from "./project.ports.ts";
import type { ProjectRepository } from "./project.repository.ts";

/**
 * A user's deletion as the projects service takes part in it (docs/adr/0015-no-orphaned-projects.md).
 * The users service and this one own separate data, so a deletion and that user's concurrent Add,
 * invitation, reply or rating meet here, on a per-user lock:
 * 1. `fence`, asked inside the users service's deleting transaction before it commits: under the user's
 *    exclusive lock, refused (409) while the user is an accepted Owner; otherwise the user is fenced.
 *    Every write of this service reads the fences of the users it writes for under the same lock (shared),
 *    in its own transaction: a write that began first commits first and the fence sees it (an Add: the
 *    deletion is refused); a write that comes after the fence is refused (401 for the caller, 404 for an
 *    invitee).
 * 2. `removeUser`, on `users.user.deleted`: the user's permissions and ratings go and the fence is marked
 *    confirmed; a user id is never reused, so it stays.
 * 3. `unfence`: the users service's transaction did not commit; the fence goes. If that call is lost too,
 *    `sweep` finds the fence unconfirmed after its grace period, asks the users service, and lifts it when
 *    the user still exists (or removes the rows when the user is gone and the event was lost).
 */
export interface UserFenceService {
  /** Bounded by the deletion's deadline: a fence is never placed after the deletion stopped waiting for it. */
  fence(userId: number, ctx: OpContext & { deadline?: number | undefined }): Promise<void>;
  unfence(userId: number, ctx: OpContext): Promise<void>;
  /** A user was deleted: their permissions and ratings go, and the ratings they leave are recomputed. */
  removeUser(userId: number, ctx: OpContext): Promise<void>;
  /** Settles fences older than `graceMs` whose deletion was never confirmed; answers how many it settled. */
  sweep(ctx: OpContext): Promise<number>;
}

const SWEEP_BATCH = 100;
/** Kept of a deletion's deadline for the fence's answer to travel back. */
const FENCE_ANSWER_MARGIN_MS = 250;

export function createUserFenceService(deps: {
  projects: ProjectRepository;
  users: Pick<UserDirectory, "byIds">;
  /** How long a deletion may take between its fence and its commit (far above an RPC's deadline). */
  graceMs: number;
  now?: () => Date;
}): UserFenceService {
  const { projects, users } = deps;
  const now = deps.now ?? (() => new Date());

  const removeUser = async (userId: number, ctx: OpContext) => {
    await projects.transaction(async (t) => {
      // Every write for the user that began has finished; those that come later find the fence.
      await t.lockUser(userId);
      await t.fence(userId, true);
      const { ratedProjectIds, ownerOf } = await t.removeUserRows(userId);
      if (ownerOf.length > 0) {
        // Only a deletion made without the fence (an earlier version) can leave this.
        ctx.log.error({ userId, projects: ownerOf }, "a deleted user owned projects; they have no Owner now");
      }
      for (const projectId of ratedProjectIds) {
        const project = await t.lockById(projectId);
        if (!project) continue;
        const before = await audienceOf(t, project);
        project.rating = await t.meanRating(projectId);
        await announce(t, projectId, "rated", before, ctx);
      }
      await t.save();
    });
  };

  return {
    fence: (userId, ctx) =>
      projects.transaction(async (t) => {
        // The users service's transaction waits for this answer until its deadline, then rolls back and
        // lifts the fence: so this never waits for the user's lock, nor commits, past that deadline (less a
        // margin for the answer's way back). Otherwise a fence could land after its lifting.
        const until = ctx.deadline === undefined ? undefined : ctx.deadline - FENCE_ANSWER_MARGIN_MS;
        const left = () => (until === undefined ? undefined : until - Date.now());
        if ((left() ?? 1) <= 0) throw ProjectErrors.fenceTooLate();
        await t.lockUser(userId, left());
        if (await t.ownsProject(userId)) throw ProjectErrors.ownerCannotGo();
        await t.fence(userId, false);
        if ((left() ?? 1) <= 0) throw ProjectErrors.fenceTooLate();
      }),

    async unfence(userId, ctx) {
      // Under the user's lock: a fence still being placed commits (or not) first, and is lifted here.
      const lifted = await projects.transaction(async (t) => {
        await t.lockUser(userId);
        return t.unfence(userId);
      });
      if (lifted) ctx.log.info({ userId }, "fence lifted: the user's deletion did not commit");
    },

    removeUser,

    async sweep(ctx) {
      const stale = await projects.pendingFences(new Date(now().getTime() - deps.graceMs), SWEEP_BATCH);
      if (stale.length === 0) return 0;
      const alive = new Set((await users.byIds(stale, ctx)).map((u) => u.id));
      for (const userId of stale) {
        if (alive.has(userId)) {
          await projects.transaction((t) => t.unfence(userId));
          ctx.log.warn({ userId }, "fence of a user who still exists lifted after its grace period");
        } else {
          await removeUser(userId, ctx);
          ctx.log.warn(
            { userId },
            "deleted user's rows removed by the sweep (the deletion's event was lost)",
          );
        }
      }
      return stale.length;
    },
  };
}

import type { ContentRef } from "@fundraise/protocol";
import type { ContentStore, OpContext, StoredContent } from "./project.ports.ts";
import type { ProjectRepository } from "./project.repository.ts";

/** The content with its whitepaper, or null: a body that brought an image alone. */
export const withFile = (ref: ContentRef): StoredContent | null =>
  ref.fileBytes === null ? null : { ...ref, fileBytes: ref.fileBytes };

/** Removes content after a write no longer needs it (a failed write's, a deleted project's, a replaced file). */
export type DiscardContent = (fileHash: string, reason: string, ctx: OpContext) => Promise<void>;

/**
 * Removes content no project holds (the same bytes uploaded twice are one pin); never throws (the
 * caller's answer does not depend on it): a removal that fails leaves an orphan pin, logged, for the
 * storage service's reconciliation.
 */
export function createDiscardContent(deps: {
  projects: Pick<ProjectRepository, "findByFileHash">;
  content: Pick<ContentStore, "remove">;
}): DiscardContent {
  const { projects, content } = deps;
  return async (fileHash, reason, ctx) => {
    try {
      if (await projects.findByFileHash(fileHash)) return;
      await content.remove(fileHash, reason, ctx);
    } catch (err) {
      ctx.log.warn({ err, fileHash, reason }, "content not removed: it stays pinned until reconciled");
    }
  };
}

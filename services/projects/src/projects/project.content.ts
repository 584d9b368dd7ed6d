import { fileHashOf } from "@fundraise/ipfs";
import {
  CONTENT_PIN_MAX_AGE_MS,
  CONTENT_RELEASE_MEMORY_MS,
  CONTENT_RELEASE_WINDOW_MS,
  type ContentRef,
  ProjectsEvents,
} from "@fundraise/protocol";
import { ProjectErrors } from "./project.errors.ts";
import type { OpContext } from "./project.ports.ts";
import type { ProjectRepository, ProjectTx } from "./project.repository.ts";

/**
 * A write's content as the gateway pinned it (ADR 0027): the directory, its fileHash (the digest of its
 * CIDv0, which the chain registers), the image's path, and the sizes the gateway counted.
 */
export interface TakenContent {
  fileHash: string;
  cid: string;
  imagePath: string | null;
  fileBytes: number;
  imageBytes: number | null;
  repinnedAfter: number;
  /** When the gateway pinned it (its clock), null when the caller did not say. */
  pinnedAt: number | null;
}

/** The content with its whitepaper, or null: a body that brought an image alone. */
export function takenContent(ref: ContentRef): TakenContent | null {
  if (ref.fileBytes === null) return null;
  return {
    fileHash: fileHashOf(ref.cid),
    cid: ref.cid,
    imagePath: ref.imageBytes === null ? null : `/ipfs/${ref.cid}/image`,
    fileBytes: ref.fileBytes,
    imageBytes: ref.imageBytes,
    repinnedAfter: ref.repinnedAfter ?? 0,
    pinnedAt: ref.pinnedAt ?? null,
  };
}

/** How long releases are remembered, and an unpin may land after one (content-release.ts). */
export const RELEASE_LIMITS = { memoryMs: CONTENT_RELEASE_MEMORY_MS, windowMs: CONTENT_RELEASE_WINDOW_MS };

/**
 * Refused while a release of the content could have unpinned it after the gateway pinned it
 * (content-release.ts: CONTENT_RELEASED, the gateway pins again and writes again): a release remembered
 * that the gateway's second pin does not follow, or one whose unpin may still land. Refused too when the
 * pin is older than releases are safely remembered for (a frozen gateway, a stalled call): 503, to send again.
 */
export function refuseReleased(
  content: TakenContent,
  release: { version: number; waitMs: number } | null,
  nowMs: number,
): void {
  if (content.pinnedAt !== null && nowMs - content.pinnedAt > CONTENT_PIN_MAX_AGE_MS) {
    throw ProjectErrors.pinStale(CONTENT_PIN_MAX_AGE_MS);
  }
  if (release && (release.version !== content.repinnedAfter || release.waitMs > 0)) {
    throw ProjectErrors.contentReleased({ fileHash: content.fileHash, ...release });
  }
}

/** `refuseReleased` on the content's releases; the caller holds `lockHash(content.fileHash)`. */
export async function requireNotReleased(t: ProjectTx, content: TakenContent): Promise<void> {
  refuseReleased(content, await t.releaseOf(content.fileHash, RELEASE_LIMITS), await t.nowMs());
}

/** A project takes content (checked by the caller): announced for the inventory in the same transaction. */
export async function takeContent(
  t: ProjectTx,
  projectId: number,
  content: TakenContent,
  reason: string,
  ctx: OpContext,
): Promise<void> {
  const { fileHash, cid, fileBytes, imageBytes } = content;
  await t.emit(ProjectsEvents.contentTaken, { projectId, fileHash, cid, fileBytes, imageBytes, reason }, ctx);
}

/** A project lets go of content (deleted, rejected, its file replaced): the storage service releases it. */
export async function dropContent(
  t: ProjectTx,
  projectId: number,
  fileHash: string,
  reason: string,
  ctx: OpContext,
): Promise<void> {
  await t.emit(ProjectsEvents.contentDropped, { projectId, fileHash, reason }, ctx);
}

export interface ContentReleases {
  /** Releases what no project holds, each under its lock, in one transaction. */
  release(
    fileHashes: string[],
    reason: string,
  ): Promise<{
    released: { fileHash: string; version: number }[];
    held: string[];
  }>;
  confirm(releases: { fileHash: string; version: number }[]): Promise<void>;
}

/** `projects.content.release` and `release-done`: the only door to an unpin (content-release.ts). */
export function createContentReleases(deps: {
  projects: Pick<ProjectRepository, "transaction">;
}): ContentReleases {
  return {
    release: (fileHashes, reason) =>
      deps.projects.transaction(async (t) => {
        const released: { fileHash: string; version: number }[] = [];
        const held: string[] = [];
        // Locks in one order, so two releases of overlapping sets never wait on each other in a cycle.
        for (const fileHash of [...new Set(fileHashes)].sort()) {
          await t.lockHash(fileHash);
          if (await t.fileHashTaken(fileHash)) held.push(fileHash);
          else
            released.push({
              fileHash,
              version: await t.release(fileHash, reason, CONTENT_RELEASE_MEMORY_MS),
            });
        }
        return { released, held };
      }),
    confirm: (releases) => deps.projects.transaction((t) => t.confirmReleases(releases)),
  };
}

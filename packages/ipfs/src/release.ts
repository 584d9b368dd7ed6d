import { CONTENT_RELEASE_WINDOW_MS } from "@fundraise/protocol";
import { cidOfFileHash } from "./file-hash.ts";
import type { Ipfs } from "./kubo.ts";

/** A content released for unpinning, by version (protocol's content-release.ts). */
export interface Release {
  fileHash: string;
  version: number;
}

/** The projects service's side of a release (`projects.content.release`, `projects.content.release-done`). */
export interface Releaser {
  release(fileHashes: string[], reason: string): Promise<{ released: Release[]; held: string[] }>;
  confirm(releases: Release[]): Promise<void>;
}

/** What became of each content asked about. */
export interface Unpinned {
  /** Released and unpinned (or found not pinned). */
  unpinned: string[];
  /** A project holds it: left pinned. */
  held: string[];
  /** Released, but the window had passed before its unpin could start: left pinned, for the next sweep. */
  late: string[];
  /** Released, and the unpin failed: left pinned (or not), for the next sweep. */
  failed: string[];
}

/**
 * Time kept free at the end of the window: an unpin starts only while at least this much of it is left,
 * and is cut at the window's end (an unpin cannot land after the window a write counts on).
 */
const SAFETY_MS = 1_000;

/**
 * Unpins content only as a release allows (ADR 0027): asks the projects service to release it, unpins
 * what it released within the window counted from before the asking (this process's monotonic clock:
 * the release is dated later, so the window ends no later than the projects service counts), and confirms
 * the unpins done. Never throws for one content's unpin; throws when the release itself failed (nothing
 * was unpinned then).
 */
export async function releaseAndUnpin(
  deps: {
    ipfs: Pick<Ipfs, "unpin">;
    releaser: Releaser;
    /** Tests shorten it; the projects service counts CONTENT_RELEASE_WINDOW_MS. */
    windowMs?: number;
  },
  fileHashes: string[],
  reason: string,
): Promise<Unpinned> {
  const windowMs = deps.windowMs ?? CONTENT_RELEASE_WINDOW_MS;
  const outcome: Unpinned = { unpinned: [], held: [], late: [], failed: [] };
  if (fileHashes.length === 0) return outcome;
  const asked = performance.now();
  const { released, held } = await deps.releaser.release(fileHashes, reason);
  outcome.held.push(...held);
  const done: Release[] = [];
  for (const release of released) {
    const left = Math.floor(windowMs - (performance.now() - asked) - SAFETY_MS);
    if (left <= 0) {
      outcome.late.push(release.fileHash);
      continue;
    }
    try {
      await deps.ipfs.unpin(cidOfFileHash(release.fileHash), { timeoutMs: left });
      done.push(release);
      outcome.unpinned.push(release.fileHash);
    } catch {
      outcome.failed.push(release.fileHash);
    }
  }
  // A confirmation lost is only a write of the same content waiting for the window's end.
  if (done.length > 0) await deps.releaser.confirm(done).catch(() => undefined);
  return outcome;
}

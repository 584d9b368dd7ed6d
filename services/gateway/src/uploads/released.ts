import { fileHashOf, type Ipfs, type Releaser, releaseAndUnpin } from "@fundraise/ipfs";
import { type AppError, type ContentRef, ErrorCode } from "@fundraise/protocol";
import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import { CID } from "multiformats/cid";

/**
 * An upload's write whose content was released meanwhile (protocol's content-release.ts, ADR 0027). The
 * gateway pinned the content as it added it; a release (a deletion of a project with the same bytes, the
 * sweep, another refused write) may unpin it before or after that pin. The projects service refuses such
 * a write with CONTENT_RELEASED: while an unpin may still land, the gateway asks again (no pin: it could be
 * undone); once every release is over, it pins the content again and writes with `repinnedAfter`.
 */

/**
 * How long one request may spend on released content before the client gets the 503 to send again: a
 * release is usually confirmed milliseconds after it was granted; one whose unpinner died keeps its bytes
 * out of reach for its whole window (minutes), which no request waits for.
 */
const RELEASED_BUDGET_MS = 15_000;
/** Asked again at least this often while waiting: a confirmed release ends the wait early. */
const ASK_EVERY_MS = 250;

interface Details {
  version: number;
  waitMs: number;
}

/** The Add/Update request again, or null: the failure is the answer. */
export function retryReleased(ipfs: Pick<Ipfs, "pin">) {
  return async <R extends { project: { content: ContentRef | null } }>(
    error: AppError,
    sent: R,
    request: FastifyRequest,
  ): Promise<R | null> => {
    const content = sent.project.content;
    if (error.code !== ErrorCode.CONTENT_RELEASED || !content) return null;
    request.releasedSince ??= performance.now();
    if (performance.now() - request.releasedSince > RELEASED_BUDGET_MS) return null;
    const { version, waitMs } = (error.details ?? {}) as Partial<Details>;
    // Details another version of the projects service would not send: no second guess, the 503 stands.
    if (!Number.isInteger(version) || !Number.isInteger(waitMs)) return null;
    if ((waitMs as number) > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs as number, ASK_EVERY_MS)));
      return sent;
    }
    try {
      await ipfs.pin(CID.parse(content.cid));
    } catch (err) {
      // Unpinned and collected meanwhile: the bytes are gone from the node; the client sends them again.
      request.log.warn(
        { err, cid: content.cid },
        "released content not pinned again: the client sends it again",
      );
      return null;
    }
    const again: ContentRef = { ...content, repinnedAfter: version as number, pinnedAt: Date.now() };
    return { ...sent, project: { ...sent.project, content: again } };
  };
}

declare module "fastify" {
  interface FastifyRequest {
    /** When this request's write first met its content released (performance.now()). */
    releasedSince?: number;
  }
}

/**
 * The content a refused write pinned goes at once, as a release allows (never content a project holds:
 * the same bytes as an existing project's, or a write that committed although its answer was lost).
 * Best effort: what stays pinned, the storage service's sweep releases after its grace period.
 */
export async function releaseRefused(
  cid: string,
  deps: { ipfs: Pick<Ipfs, "unpin">; releaser: Releaser; log: FastifyBaseLogger },
): Promise<void> {
  try {
    const outcome = await releaseAndUnpin(deps, [fileHashOf(cid)], "gateway:write-refused");
    deps.log.debug({ cid, ...outcome }, "a refused write's content released");
  } catch (err) {
    deps.log.warn({ err, cid }, "a refused write's content not released: the storage service's sweep will");
  }
}

import { type ContentLimits, cidOfFileHash, type Ipfs } from "@fundraise/ipfs";
import { isAppError } from "@fundraise/protocol";
import type { FastifyBaseLogger } from "fastify";

/** Files read from IPFS at once for one withHex list. */
const CONCURRENCY = 4;

/**
 * A list's projects with `fileHex`, the whitepaper read from IPFS by the gateway (no file content crosses
 * the bus). A file the node cannot find leaves its project without `fileHex` (logged): one lost file
 * does not hide the list; a node that is down or slow fails it (503/504).
 */
export async function withFileHex<P extends { fileHash: string; projectID: number }>(
  projects: P[],
  deps: { ipfs: Ipfs; limits: ContentLimits; log: FastifyBaseLogger },
): Promise<(P & { fileHex?: string })[]> {
  const out: (P & { fileHex?: string })[] = new Array(projects.length);
  let next = 0;
  const read = async (project: P): Promise<P & { fileHex?: string }> => {
    try {
      const path = `/ipfs/${cidOfFileHash(project.fileHash)}/whitepaper`;
      const bytes = await deps.ipfs.cat(path, deps.limits.maxFileBytes);
      return {
        ...project,
        fileHex: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex"),
      };
    } catch (error) {
      if (!isAppError(error) || error.kind !== "not_found") throw error;
      deps.log.warn(
        { projectId: project.projectID, fileHash: project.fileHash },
        "project content not found",
      );
      return project;
    }
  };
  const worker = async () => {
    while (next < projects.length) {
      const i = next++;
      out[i] = await read(projects[i] as P);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, projects.length) }, worker));
  return out;
}

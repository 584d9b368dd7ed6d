import * as dagPb from "@ipld/dag-pb";
import type { FsBlockstore } from "blockstore-fs";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { identity } from "multiformats/hashes/identity";
import { isNotFound, RpcError } from "./rpc-args.ts";

/**
 * Kubo's `repo gc` (kubo gc/gc.go): mark every block reachable from a recursive pin, then delete every
 * other block in the store. Blocks are files named by their multihash, so a block is kept when any CID
 * with its multihash is reachable (CIDv0 or v1, dag-pb or raw), and reported as Kubo reports it: the
 * CIDv1 raw of that multihash (`bafkrei…`). The caller holds the GC lock exclusively.
 */

/** What `repo/gc` takes: Kubo's `quiet` (no change to the JSON answer) and `silent` (no answer lines). */
const GC_OPTIONS = new Set(["quiet", "silent", "timeout"]);

export function parseGcOptions(query: URLSearchParams): { silent: boolean } {
  for (const key of query.keys()) {
    if (!GC_OPTIONS.has(key)) throw new RpcError(400, `option "${key}" is not supported by this stand-in`);
  }
  const silent = query.get("silent");
  if (silent !== null && !["", "true", "1", "false", "0"].includes(silent)) {
    throw new RpcError(400, `option "silent": invalid boolean "${silent}"`);
  }
  return { silent: silent === "" || silent === "true" || silent === "1" };
}

const multihashKey = (cid: CID) => Buffer.from(cid.multihash.bytes).toString("hex");

async function readBlock(blocks: Pick<FsBlockstore, "get">, cid: CID): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of blocks.get(cid)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The multihashes (hex) of every block reachable from `roots`: dag-pb nodes by their links, raw blocks
 * end a branch, identity CIDs have no block. A block that is missing or cannot be decoded aborts the GC
 * before anything is deleted, as Kubo aborts ("could not retrieve some links").
 */
export async function markReachable(
  blocks: Pick<FsBlockstore, "get" | "has">,
  roots: CID[],
): Promise<Set<string>> {
  const marked = new Set<string>();
  const visited = new Set<string>();
  const pending = [...roots];
  for (let cid = pending.pop(); cid !== undefined; cid = pending.pop()) {
    if (cid.multihash.code === identity.code) continue;
    const seen = cid.toV1().toString();
    if (visited.has(seen)) continue;
    visited.add(seen);
    try {
      if (cid.code === dagPb.code) {
        for (const link of dagPb.decode(await readBlock(blocks, cid)).Links) pending.push(link.Hash);
      } else if (cid.code === raw.code) {
        if (!(await blocks.has(cid)))
          throw Object.assign(new Error(`ipld: could not find ${cid}`), { name: "NotFoundError" });
      } else {
        throw new Error(`codec 0x${cid.code.toString(16)} is not supported by this stand-in`);
      }
    } catch (error) {
      const reason = isNotFound(error)
        ? "block was not found locally (offline)"
        : error instanceof Error
          ? error.message
          : String(error);
      throw new RpcError(500, `garbage collection aborted: could not retrieve links for ${cid}: ${reason}`);
    }
    marked.add(multihashKey(cid));
  }
  return marked;
}

/**
 * Deletes every stored block whose multihash is not `marked`, yielding each as Kubo names it. A block
 * that cannot be deleted does not stop the sweep; the sweep then fails at its end, as Kubo's does
 * ("could not delete some blocks").
 */
export async function* sweep(
  blocks: Pick<FsBlockstore, "getAll" | "delete">,
  marked: Set<string>,
): AsyncGenerator<CID> {
  const failures: string[] = [];
  for await (const { cid } of blocks.getAll()) {
    if (marked.has(multihashKey(cid))) continue;
    const removed = CID.createV1(raw.code, cid.multihash);
    try {
      await blocks.delete(cid);
    } catch (error) {
      failures.push(`could not remove ${removed}: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    yield removed;
  }
  if (failures.length > 0) {
    throw new Error(`garbage collection incomplete: could not delete some blocks (${failures.join("; ")})`);
  }
}

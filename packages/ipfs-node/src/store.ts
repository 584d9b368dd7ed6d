import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FsBlockstore } from "blockstore-fs";
import type { CID } from "multiformats/cid";

/**
 * The block store as adds write to it: each block written once, as Kubo does. blockstore-fs writes a
 * block through a temporary file named after the block and renames it; two adds of the same bytes at once
 * (six Adds of one whitepaper) wrote one block from two writers, and the writer that found its temporary
 * file renamed away retried its rename ten times, 100 ms apart: 0.9 s per shared block. A block being
 * written is waited for, a block already stored is not written again.
 */
function writingOnce(blocks: FsBlockstore): Pick<FsBlockstore, "put"> {
  const writing = new Map<string, Promise<CID>>();
  return {
    put(cid, bytes, options) {
      // The file is named by the multihash: CIDs that differ only in version or codec share it.
      const key = Buffer.from(cid.multihash.bytes).toString("hex");
      const pending = writing.get(key);
      if (pending) return pending;
      const write = (async () => ((await blocks.has(cid)) ? cid : blocks.put(cid, bytes, options)))().finally(
        () => writing.delete(key),
      );
      writing.set(key, write);
      return write;
    },
  };
}

/** The node's disk: blocks in `<dataDir>/blocks`, recursive pins in `<dataDir>/pins.json`. */
export interface NodeStore {
  blocks: FsBlockstore;
  /** The block store as adds write to it (each block once). */
  blockWrites: Pick<FsBlockstore, "put">;
  /** The recursively pinned CIDs. */
  pins: Set<string>;
  /** Writes `pins` to disk (one write after another, each through a temporary file). */
  savePins(): Promise<void>;
  /** Waits for the last pin write, then closes the block store. */
  close(): Promise<void>;
}

export async function openStore(dataDir: string): Promise<NodeStore> {
  const blocks = new FsBlockstore(join(dataDir, "blocks"));
  const blockWrites = writingOnce(blocks);
  await mkdir(dataDir, { recursive: true });
  await blocks.open();
  const pinFile = join(dataDir, "pins.json");
  const pins = new Set<string>(
    await readFile(pinFile, "utf8").then(
      (text) => JSON.parse(text) as string[],
      () => [],
    ),
  );
  let pinWrites: Promise<void> = Promise.resolve();
  const savePins = () => {
    const snapshot = JSON.stringify([...pins].sort());
    pinWrites = pinWrites.then(async () => {
      await writeFile(`${pinFile}.tmp`, snapshot);
      await rename(`${pinFile}.tmp`, pinFile);
    });
    return pinWrites;
  };
  return {
    blocks,
    blockWrites,
    pins,
    savePins,
    async close() {
      await pinWrites.catch(() => undefined);
      await blocks.close();
    },
  };
}

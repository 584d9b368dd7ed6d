import type { IncomingMessage } from "node:http";
import type { FsBlockstore } from "blockstore-fs";
import busboy from "busboy";
import { type ImportCandidate, importer } from "ipfs-unixfs-importer";
import type { CID } from "multiformats/cid";
import { RpcError } from "./rpc-args.ts";
import { type AddOptions, importerOptions } from "./unixfs.ts";

/** A queue the multipart parser pushes into and the importer pulls from (one part at a time). */
function partQueue() {
  const items: (ImportCandidate | Error | null)[] = [];
  let wake: (() => void) | undefined;
  const push = (item: ImportCandidate | Error | null) => {
    items.push(item);
    wake?.();
  };
  async function* drain(): AsyncGenerator<ImportCandidate> {
    for (;;) {
      const item = items.shift();
      if (item === undefined) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      if (item === null) return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
  return { push, drain };
}

/** One line of `add`'s answer. */
export interface AddedEntry {
  Name: string;
  Hash: string;
  Size: string;
}

/**
 * Imports an `add` request's multipart body into `store` with the UnixFS importer, as Kubo does: every
 * entry it made, and the roots (the top-level files, or the wrapping directory).
 */
export async function importParts(
  req: IncomingMessage,
  opts: AddOptions,
  store: Pick<FsBlockstore, "put">,
): Promise<{ results: AddedEntry[]; roots: CID[] }> {
  if (!(req.headers["content-type"] ?? "").startsWith("multipart/form-data")) {
    throw new RpcError(400, "file argument 'path' is required");
  }
  const queue = partQueue();
  const parser = busboy({ headers: req.headers, preservePath: true, limits: { fieldSize: 1024 } });
  parser.on("file", (_name, stream, info) => {
    const path = decodeURIComponent(info.filename ?? "").replace(/^\/+/, "");
    if (info.mimeType === "application/x-directory") {
      stream.resume();
      queue.push({ path });
    } else {
      queue.push({ path, content: stream });
    }
  });
  parser.on("close", () => queue.push(null));
  parser.on("error", (err) => queue.push(err instanceof Error ? err : new Error(String(err))));
  req.on("error", (err) => {
    queue.push(err);
    // A part being read ends with the error too: the import stops instead of waiting for it forever.
    parser.destroy(err);
  });
  req.pipe(parser);
  const results: AddedEntry[] = [];
  const roots: CID[] = [];
  // One file at a time: the multipart parts arrive in order, and the parser gives the next part only
  // once this one's content is read (a wider batch would wait for a part that cannot come yet).
  for await (const entry of importer(queue.drain(), store, {
    ...importerOptions(opts),
    fileImportConcurrency: 1,
  })) {
    const cid = entry.cid.toString();
    const path = entry.path ?? "";
    // Kubo names a nameless file by its CID, and the wrapping directory "".
    results.push({
      Name: path || (opts.wrapWithDirectory ? "" : cid),
      Hash: cid,
      Size: String(entry.size),
    });
    if (opts.wrapWithDirectory ? path === "" : !path.includes("/")) roots.push(entry.cid);
  }
  if (results.length === 0) throw new RpcError(400, "file argument 'path' is required");
  return { results, roots };
}

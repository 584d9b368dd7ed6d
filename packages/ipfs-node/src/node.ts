import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { FsBlockstore } from "blockstore-fs";
import busboy from "busboy";
import { exporter } from "ipfs-unixfs-exporter";
import { type ImportCandidate, importer } from "ipfs-unixfs-importer";
import { CID } from "multiformats/cid";
import { type AddOptions, discardingStore, importerOptions, KUBO_ADD_DEFAULTS } from "./unixfs.ts";

/**
 * A STAND-IN for Kubo, not Kubo: an HTTP server on loopback that answers the few Kubo RPC API calls the
 * storage service makes (`add`, `cat`, `pin/add`, `pin/rm`, `pin/ls`, `version`) the way Kubo answers
 * them, so `kubo-rpc-client` is the only code path in development, tests and production. Blocks live on
 * disk (`<dataDir>/blocks`, blockstore-fs), recursive pins in `<dataDir>/pins.json`. CIDs come from
 * `ipfs-unixfs-importer` with Kubo's import settings. It has no network, no garbage collection, no
 * gateway; an option that would change a CID and that it does not implement is refused, never ignored.
 */
export interface IpfsNodeOptions {
  dataDir: string;
  host?: string;
  /** 0 (the default): a free port. */
  port?: number;
}

export interface IpfsNode {
  /** The RPC API's base URL, as `IPFS_API_URL` takes it: `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export const STAND_IN_VERSION = "0.1.0-fundraise-stand-in";

class RpcError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Kubo's query flags: `true`, `false`, `1`, `0`, or present without a value. */
function flag(query: URLSearchParams, name: string): boolean | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (value === "" || value === "true" || value === "1") return true;
  if (value === "false" || value === "0") return false;
  throw new RpcError(400, `option "${name}": invalid boolean "${value}"`);
}

/** What a Kubo-RPC client may send to `add` and this node honours or harmlessly ignores. */
const ADD_OPTIONS = new Set([
  "cid-version",
  "raw-leaves",
  "chunker",
  "trickle",
  "wrap-with-directory",
  "pin",
  "only-hash",
  "hash",
  "progress",
  "stream-channels",
  "quiet",
  "quieter",
  "silent",
  "timeout",
]);

export function parseAddOptions(query: URLSearchParams): AddOptions & { pin: boolean; onlyHash: boolean } {
  for (const key of query.keys()) {
    if (!ADD_OPTIONS.has(key)) throw new RpcError(400, `option "${key}" is not supported by this stand-in`);
  }
  const version = query.get("cid-version") ?? "0";
  if (version !== "0" && version !== "1") throw new RpcError(400, `unknown CID version "${version}"`);
  const cidVersion = version === "1" ? 1 : 0;
  const hash = query.get("hash") ?? "sha2-256";
  if (hash !== "sha2-256") throw new RpcError(400, `hash "${hash}" is not supported by this stand-in`);
  const chunker = query.get("chunker") ?? `size-${KUBO_ADD_DEFAULTS.chunkSize}`;
  const size = /^size-([0-9]{1,9})$/.exec(chunker);
  const chunkSize = size ? Number(size[1]) : 0;
  if (chunkSize < 1 || chunkSize > 1_048_576) {
    throw new RpcError(400, `chunker "${chunker}" is not supported by this stand-in (size-<n> only)`);
  }
  return {
    cidVersion,
    // Kubo: raw leaves by default with CIDv1, none with CIDv0.
    rawLeaves: flag(query, "raw-leaves") ?? cidVersion === 1,
    chunkSize,
    trickle: flag(query, "trickle") ?? false,
    wrapWithDirectory: flag(query, "wrap-with-directory") ?? false,
    pin: flag(query, "pin") ?? true,
    onlyHash: flag(query, "only-hash") ?? false,
  };
}

/** `Qm…`, `/ipfs/Qm…/a/b` → `Qm…/a/b`, checked. */
function ipfsPath(arg: string | null): { path: string; root: CID } {
  if (arg === null || arg === "") throw new RpcError(400, 'argument "ipfs-path" is required');
  const path = arg.replace(/^\/ipfs\//, "");
  const [first] = path.split("/");
  try {
    return { path, root: CID.parse(first ?? "") };
  } catch {
    throw new RpcError(500, `invalid path "${arg}": invalid cid`);
  }
}

function isNotFound(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "NotFoundError";
}

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

export async function startIpfsNode(options: IpfsNodeOptions): Promise<IpfsNode> {
  const blocks = new FsBlockstore(join(options.dataDir, "blocks"));
  const blockWrites = writingOnce(blocks);
  await mkdir(options.dataDir, { recursive: true });
  await blocks.open();
  const pinFile = join(options.dataDir, "pins.json");
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

  async function add(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    const opts = parseAddOptions(query);
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
    req.on("error", (err) => queue.push(err));
    req.pipe(parser);
    const store = opts.onlyHash ? discardingStore : blockWrites;
    const results: { Name: string; Hash: string; Size: string }[] = [];
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
    if (opts.pin && !opts.onlyHash) {
      for (const root of roots) pins.add(root.toString());
      await savePins();
    }
    res.writeHead(200, { "Content-Type": "application/json", "X-Chunked-Output": "1" });
    res.end(results.map((r) => `${JSON.stringify(r)}\n`).join(""));
  }

  async function cat(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const { path } = ipfsPath(query.get("arg"));
    const offset = query.has("offset") ? Number(query.get("offset")) : undefined;
    const length = query.has("length") ? Number(query.get("length")) : undefined;
    const entry = await exporter(path, blocks);
    // The exporter stops at a file and hands it back with the rest of the path unresolved; Kubo refuses
    // a path that goes on below a file.
    const wanted = path.split("/").filter(Boolean).length;
    if (entry.path.split("/").filter(Boolean).length !== wanted) {
      throw new RpcError(500, `no link named "${path.split("/").at(-1)}" under ${entry.cid}`);
    }
    if (entry.type === "directory") throw new RpcError(500, "this dag node is a directory");
    if (entry.type !== "file" && entry.type !== "raw" && entry.type !== "identity") {
      throw new RpcError(500, `not a file: ${entry.type}`);
    }
    const content = entry.content({
      ...(offset === undefined ? {} : { offset }),
      ...(length === undefined ? {} : { length }),
    });
    // The first chunk before the headers: a missing block then is an error answer, not a cut stream.
    const iterator = content[Symbol.asyncIterator]();
    const first = await iterator.next();
    res.writeHead(200, { "Content-Type": "text/plain", "X-Stream-Output": "1" });
    if (!first.done) res.write(first.value);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (!res.write(next.value)) await new Promise((resolve) => res.once("drain", resolve));
    }
    res.end();
  }

  function json(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(`${JSON.stringify(body)}\n`);
  }

  async function pinAdd(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const added: string[] = [];
    for (const arg of query.getAll("arg")) {
      const { path, root } = ipfsPath(arg);
      if (path !== root.toString()) throw new RpcError(400, "this stand-in pins CIDs, not paths");
      if (!(await blocks.has(root))) {
        throw new RpcError(500, `block was not found locally (offline): ipld: could not find ${root}`);
      }
      pins.add(root.toString());
      added.push(root.toString());
    }
    if (added.length === 0) throw new RpcError(400, 'argument "ipfs-path" is required');
    await savePins();
    json(res, { Pins: added });
  }

  async function pinRm(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const args = query.getAll("arg").map((arg) => ipfsPath(arg).root.toString());
    if (args.length === 0) throw new RpcError(400, 'argument "ipfs-path" is required');
    for (const cid of args) if (!pins.has(cid)) throw new RpcError(500, "not pinned or pinned indirectly");
    for (const cid of args) pins.delete(cid);
    await savePins();
    json(res, { Pins: args });
  }

  function pinLs(res: ServerResponse, query: URLSearchParams): void {
    const type = query.get("type") ?? "all";
    const args = query.getAll("arg").map((arg) => ipfsPath(arg).root.toString());
    const wanted = type === "all" || type === "recursive" ? args : [];
    for (const cid of args) if (!pins.has(cid)) throw new RpcError(500, `path '${cid}' is not pinned`);
    const listed = args.length > 0 ? wanted : type === "all" || type === "recursive" ? [...pins] : [];
    json(res, { Keys: Object.fromEntries(listed.map((cid) => [cid, { Type: "recursive" }])) });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const command = url.pathname.replace(/^\/api\/v0\//, "");
    if (!url.pathname.startsWith("/api/v0/")) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("404 page not found");
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { "Content-Type": "text/plain" });
      res.end(`${req.method} not allowed`);
      return;
    }
    const query = url.searchParams;
    switch (command) {
      case "add":
        return add(req, res, query);
      case "cat":
        return cat(res, query);
      case "pin/add":
        return pinAdd(res, query);
      case "pin/rm":
        return pinRm(res, query);
      case "pin/ls":
        return pinLs(res, query);
      case "version":
        return json(res, {
          Version: STAND_IN_VERSION,
          Commit: "",
          Repo: "0",
          System: `${process.arch}/${process.platform}`,
          Golang: "none (fundraise Kubo-RPC stand-in, Node.js)",
        });
      default:
        res.writeHead(404, { "Content-Type": "text/plain" });
        res.end("404 page not found");
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof RpcError ? error.status : 500;
      const message = isNotFound(error)
        ? `block was not found locally (offline): ${error instanceof Error ? error.message : String(error)}`
        : error instanceof Error
          ? error.message
          : String(error);
      req.resume();
      if (res.headersSent) {
        res.destroy(error instanceof Error ? error : undefined);
        return;
      }
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(`${JSON.stringify({ Message: message, Code: 0, Type: "error" })}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? "127.0.0.1";
  let stopped: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    stop() {
      stopped ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await pinWrites.catch(() => undefined);
        await blocks.close();
      })();
      return stopped;
    },
  };
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FsBlockstore } from "blockstore-fs";
import { exporter } from "ipfs-unixfs-exporter";
import { CID } from "multiformats/cid";
import { importParts } from "./add.ts";
import { serveGateway } from "./gateway.ts";
import { markReachable, parseGcOptions, sweep } from "./gc.ts";
import { ipfsPath, isNotFound, parseAddOptions, RpcError } from "./rpc-args.ts";
import { GcLock, type Release } from "./rwlock.ts";
import { openStore } from "./store.ts";
import { discardingStore } from "./unixfs.ts";

export { parseAddOptions };

/**
 * A STAND-IN for Kubo, not Kubo: an HTTP server on loopback that answers the few Kubo RPC API calls the
 * platform makes (`add`, `cat`, `pin/add`, `pin/rm`, `pin/ls`, `repo/gc`, `version`) the way Kubo answers
 * them, so `kubo-rpc-client` is the only code path in development, tests and production. Blocks live on
 * disk (`<dataDir>/blocks`, blockstore-fs), recursive pins in `<dataDir>/pins.json`. CIDs come from
 * `ipfs-unixfs-importer` with Kubo's import settings. Garbage collection is Kubo's: it removes every block
 * no recursive pin reaches, under Kubo's GC lock (a GC alone; each add, from its first block to its pin,
 * and each `pin/add` shared). The same server is a read-only gateway for files, `GET /ipfs/<cid>/<path>`
 * (gateway.ts), as Kubo's RPC port is. It has no network, so a missing block fails at once; an option
 * that would change a CID and that it does not implement is refused, never ignored.
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

export async function startIpfsNode(options: IpfsNodeOptions): Promise<IpfsNode> {
  const store = await openStore(options.dataDir);
  const { blocks, pins, savePins } = store;
  const gcLock = new GcLock();

  async function add(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    const opts = parseAddOptions(query);
    // Kubo's add holds the GC lock shared from its first block to its pin: a GC then waits for it, and
    // an add whose first block comes while a GC runs or waits waits for that GC.
    let held: Promise<Release> | undefined;
    // An add whose client went away gives the lock back then, as Kubo cancels it: the multipart parser
    // does not end a file part whose request was cut, so the import may never end on its own.
    let cancelled = false;
    res.once("close", () => {
      if (res.writableFinished) return;
      cancelled = true;
      held?.then((release) => release());
    });
    const locked: Pick<FsBlockstore, "put"> = {
      async put(cid, bytes, options) {
        if (cancelled) throw new Error("add cancelled: the client went away");
        held ??= gcLock.shared();
        await held;
        return store.blockWrites.put(cid, bytes, options);
      },
    };
    try {
      const { results, roots } = await importParts(req, opts, opts.onlyHash ? discardingStore : locked);
      if (opts.pin && !opts.onlyHash) {
        for (const root of roots) pins.add(root.toString());
        await savePins();
      }
      res.writeHead(200, { "Content-Type": "application/json", "X-Chunked-Output": "1" });
      res.end(results.map((r) => `${JSON.stringify(r)}\n`).join(""));
    } finally {
      if (held) (await held)();
    }
  }

  /** Kubo's `repo gc`: NDJSON `{"Key":{"/":"<cid>"}}` per removed block, streamed as they go. */
  async function repoGc(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const { silent } = parseGcOptions(query);
    const release = await gcLock.exclusive();
    try {
      if (res.destroyed) return;
      const marked = await markReachable(
        blocks,
        [...pins].map((cid) => CID.parse(cid)),
      );
      res.writeHead(200, { "Content-Type": "application/json", "X-Chunked-Output": "1" });
      for await (const cid of sweep(blocks, marked)) {
        // Not waiting for the client: the lock is held until the sweep ends, as Kubo's GC goes on.
        if (!silent) res.write(`${JSON.stringify({ Key: { "/": cid.toString() } })}\n`);
      }
      res.end();
    } finally {
      release();
    }
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
    const release = await gcLock.shared();
    try {
      await pinAddLocked(res, query);
    } finally {
      release();
    }
  }

  async function pinAddLocked(res: ServerResponse, query: URLSearchParams): Promise<void> {
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
    if (url.pathname.startsWith("/ipfs/")) return serveGateway(req, res, blocks);
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
      case "repo/gc":
        return repoGc(res, query);
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
        await store.close();
      })();
      return stopped;
    },
  };
}

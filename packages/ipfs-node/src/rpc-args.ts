import { CID } from "multiformats/cid";
import { type AddOptions, KUBO_ADD_DEFAULTS } from "./unixfs.ts";

/** An RPC call's failure as Kubo answers it: this HTTP status, `{ Message, Code: 0, Type: "error" }`. */
export class RpcError extends Error {
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
export function ipfsPath(arg: string | null): { path: string; root: CID } {
  if (arg === null || arg === "") throw new RpcError(400, 'argument "ipfs-path" is required');
  const path = arg.replace(/^\/ipfs\//, "");
  const [first] = path.split("/");
  try {
    return { path, root: CID.parse(first ?? "") };
  } catch {
    throw new RpcError(500, `invalid path "${arg}": invalid cid`);
  }
}

export function isNotFound(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "NotFoundError";
}

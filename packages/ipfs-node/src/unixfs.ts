import { type ImportCandidate, type ImporterOptions, importer } from "ipfs-unixfs-importer";
import { fixedSize } from "ipfs-unixfs-importer/chunker";
import { balanced, trickle } from "ipfs-unixfs-importer/layout";
import { base58btc } from "multiformats/bases/base58";
import { CID } from "multiformats/cid";
import * as Digest from "multiformats/hashes/digest";

/**
 * Kubo's default `ipfs add` (rules.md §4.5, ADR 0022): CIDv0, dag-pb, size-262144 chunks, balanced layout with
 * 174 links per node, no raw leaves. Helia and the importer default to CIDv1, raw leaves and 1 MiB chunks,
 * so every import here passes these explicitly.
 */
export const KUBO_CHUNK_SIZE = 262_144;
export const KUBO_MAX_LINKS = 174;
export const KUBO_DEFAULTS = {
  cidVersion: 0,
  rawLeaves: false,
  reduceSingleLeafToSelf: true,
  chunker: fixedSize({ chunkSize: KUBO_CHUNK_SIZE }),
  layout: balanced({ maxChildrenPerNode: KUBO_MAX_LINKS }),
} as const satisfies ImporterOptions;

/** The Kubo `add` query options this node honours, as Kubo's RPC names them. */
export interface AddOptions {
  cidVersion: 0 | 1;
  rawLeaves: boolean;
  chunkSize: number;
  trickle: boolean;
  wrapWithDirectory: boolean;
}

export const KUBO_ADD_DEFAULTS: AddOptions = {
  cidVersion: 0,
  rawLeaves: false,
  chunkSize: KUBO_CHUNK_SIZE,
  trickle: false,
  wrapWithDirectory: false,
};

/** Importer options equivalent to a Kubo `add` with these options. */
export function importerOptions(options: AddOptions): ImporterOptions {
  return {
    cidVersion: options.cidVersion,
    rawLeaves: options.rawLeaves,
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: options.chunkSize }),
    // Kubo's trickle layout keeps UnixFS leaves of type raw (importer docs, `leafType`).
    layout: options.trickle
      ? trickle({ maxChildrenPerNode: KUBO_MAX_LINKS, layerRepeat: 4 })
      : balanced({ maxChildrenPerNode: KUBO_MAX_LINKS }),
    ...(options.trickle && !options.rawLeaves ? { leafType: "raw" as const } : {}),
    wrapWithDirectory: options.wrapWithDirectory,
  };
}

/** Takes blocks and keeps none: hashing only (Kubo's `--only-hash`). */
export const discardingStore = { put: async (cid: CID) => cid };

/** The CID Kubo's default `ipfs add` gives these bytes, computed without any node. */
export async function kuboCidOf(content: Uint8Array): Promise<CID> {
  let last: CID | undefined;
  for await (const entry of importer([{ content }], discardingStore, KUBO_DEFAULTS)) last = entry.cid;
  return last!;
}

/**
 * The CID of `ipfs add --wrap-with-directory` over these files (name → bytes), computed without any node:
 * the directory that holds them, under their names.
 */
export async function kuboDirectoryCidOf(files: Record<string, Uint8Array>): Promise<CID> {
  const source: ImportCandidate[] = Object.entries(files).map(([path, content]) => ({ path, content }));
  let root: CID | undefined;
  for await (const entry of importer(source, discardingStore, {
    ...KUBO_DEFAULTS,
    wrapWithDirectory: true,
  })) {
    if (entry.path === "") root = entry.cid;
  }
  return root!;
}

/**
 * A CIDv0's sha2-256 digest as 64 upper-case hex characters, the platform's `fileHash` (the original
 * system stored the base58-decoded CIDv0 without its `1220` multihash prefix).
 */
export function digestHexOf(cid: CID | string): string {
  const parsed = typeof cid === "string" ? CID.parse(cid) : cid;
  if (parsed.version !== 0) throw new Error(`not a CIDv0: ${parsed.toString()}`);
  const bytes = base58btc.baseDecode(parsed.toString());
  if (bytes.length !== 34 || bytes[0] !== 0x12 || bytes[1] !== 0x20)
    throw new Error("not a sha2-256 multihash");
  return Buffer.from(bytes.subarray(2)).toString("hex").toUpperCase();
}

/** The inverse of digestHexOf: the CIDv0 of a 64-hex sha2-256 digest (either case). */
export function cidOfDigestHex(hex: string): CID<unknown, 0x70, 0x12, 0> {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error("not 64 hex characters");
  return CID.createV0(Digest.create(0x12, Buffer.from(hex, "hex")));
}

import { base58btc } from "multiformats/bases/base58";
import { CID } from "multiformats/cid";
import * as Digest from "multiformats/hashes/digest";

/**
 * `fileHash` as the original system stored it: the CIDv0's sha2-256 digest, here as 64 upper-case hex
 * characters (base58-decode the CIDv0, drop the leading `1220` multihash prefix).
 */
export function fileHashOf(cid: CID | string): string {
  const text = cid.toString();
  const bytes = base58btc.baseDecode(text);
  if (!text.startsWith("Qm") || bytes.length !== 34 || bytes[0] !== 0x12 || bytes[1] !== 0x20) {
    throw new Error(`not a sha2-256 CIDv0: ${text}`);
  }
  return Buffer.from(bytes.subarray(2)).toString("hex").toUpperCase();
}

/** The CIDv0 a fileHash names (the inverse of fileHashOf). */
export function cidOfFileHash(fileHash: string): CID {
  if (!/^[0-9A-Fa-f]{64}$/.test(fileHash)) throw new Error("a fileHash is 64 hex characters");
  return CID.createV0(Digest.create(0x12, Buffer.from(fileHash, "hex")));
}

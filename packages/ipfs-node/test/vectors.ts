import { createHash } from "node:crypto";

/** The golden vectors' content generator: concat of sha512(name ‖ i as big-endian u64), truncated to `length`. */
export function pseudoRandom(name: string, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0, offset = 0; offset < length; i++, offset += 64) {
    const counter = Buffer.alloc(8);
    counter.writeBigUInt64BE(BigInt(i));
    const block = createHash("sha512").update(name).update(counter).digest();
    out.set(block.subarray(0, Math.min(64, length - offset)), offset);
  }
  return out;
}

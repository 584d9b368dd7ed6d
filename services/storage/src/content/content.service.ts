import type { TraceContext } from "@fundraise/bus";
import { StorageEvents } from "@fundraise/protocol";
import { CID } from "multiformats/cid";
import { StorageErrors } from "./content.errors.ts";
import { cidOfFileHash, fileHashOf } from "./file-hash.ts";
import type { Ipfs } from "./ipfs.ts";
import type { PinRepository } from "./pin.repository.ts";

export interface Uploaded {
  fileHash: string;
  cid: string;
  imagePath: string | null;
}

export interface ContentService {
  upload(
    input: { file: Uint8Array; image: Uint8Array | null; reason: string },
    ctx: TraceContext,
  ): Promise<Uploaded>;
  remove(fileHash: string, reason: string, ctx: TraceContext): Promise<boolean>;
  read(fileHash: string): Promise<Uint8Array>;
}

/**
 * The rules of the storage service (no SQL, no HTTP): what goes on IPFS, how it is named, and that the
 * inventory and the node agree. Upload pins first and records after; a failed record unpins again, so
 * no content stays pinned without its row. Remove unpins and records in one transaction (an unpin that
 * finds nothing pinned counts as done, so a retry after a failed commit is safe).
 */
export function createContentService(deps: {
  ipfs: Ipfs;
  pins: PinRepository;
  limits: { maxFileBytes: number; maxImageBytes: number };
}): ContentService {
  const { ipfs, pins, limits } = deps;

  return {
    async upload({ file, image, reason }, ctx) {
      if (file.byteLength === 0) throw StorageErrors.empty("file");
      if (file.byteLength > limits.maxFileBytes) throw StorageErrors.tooLarge("file", limits.maxFileBytes);
      if (image !== null && image.byteLength === 0) throw StorageErrors.empty("image");
      if (image !== null && image.byteLength > limits.maxImageBytes) {
        throw StorageErrors.tooLarge("image", limits.maxImageBytes);
      }
      const files = [{ name: "whitepaper", content: file }];
      if (image !== null) files.push({ name: "image", content: image });
      const cid = (await ipfs.addDirectory(files)).toString();
      const fileHash = fileHashOf(cid);
      const uploaded = { fileHash, cid, imagePath: image === null ? null : `/ipfs/${cid}/image` };
      try {
        await pins.transaction(async (tx) => {
          // The same bytes again: already pinned and recorded (the add above pinned nothing new).
          if (await tx.lockLive(fileHash)) return;
          tx.create({
            cid,
            fileHash,
            reason,
            fileBytes: file.byteLength,
            imageBytes: image?.byteLength ?? null,
          });
          await tx.emit(StorageEvents.pinned, { fileHash, cid, reason }, ctx);
          await tx.save();
        });
      } catch (error) {
        // Nothing recorded: take the pin back unless another upload recorded the same content meanwhile.
        if (!(await pins.findLive(fileHash).catch(() => null))) {
          await ipfs.unpin(CID.parse(cid)).catch(() => undefined);
        }
        throw error;
      }
      return uploaded;
    },

    async remove(fileHash, reason, ctx) {
      return pins.transaction(async (tx) => {
        const pin = await tx.lockLive(fileHash);
        if (!pin) return false;
        await ipfs.unpin(CID.parse(pin.cid));
        pin.unpinnedAt = new Date();
        pin.unpinReason = reason;
        await tx.emit(StorageEvents.unpinned, { fileHash, cid: pin.cid, reason }, ctx);
        await tx.save();
        return true;
      });
    },

    async read(fileHash) {
      return ipfs.cat(`/ipfs/${cidOfFileHash(fileHash)}/whitepaper`, limits.maxFileBytes);
    },
  };
}

import { defineEntity, p } from "@mikro-orm/core";

/**
 * One thing this service put on IPFS: the directory's CID and fileHash, why, and when it was pinned, last
 * uploaded (the same bytes again find the live row) and unpinned. At most one live row (unpinnedAt null)
 * per fileHash.
 */
export const Pin = defineEntity({
  name: "Pin",
  tableName: "pin",
  properties: {
    id: p.integer().primary().autoincrement(),
    cid: p.string().length(100),
    fileHash: p.string().length(64),
    reason: p.string().length(200),
    fileBytes: p.integer(),
    imageBytes: p.integer().nullable(),
    pinnedAt: p.datetime().onCreate(() => new Date()),
    lastUploadedAt: p.datetime().onCreate(() => new Date()),
    unpinnedAt: p.datetime().nullable(),
    unpinReason: p.string().length(200).nullable(),
  },
});
export type Pin = InstanceType<typeof Pin.class>;

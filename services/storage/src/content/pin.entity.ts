import { defineEntity, p } from "@mikro-orm/core";

/**
 * One content's pin as the inventory knows it (ADR 0023): the directory's CID and fileHash, why it is
 * stored, its sizes when known, and when it was recorded and unpinned. At most one live row (unpinnedAt
 * null) per fileHash. `lastUploadedAt` is no longer read: storage stopped pinning uploads itself, so
 * nothing makes a row young again; it is written equal to `pinnedAt`.
 */
export const Pin = defineEntity({
  name: "Pin",
  tableName: "pin",
  properties: {
    id: p.integer().primary().autoincrement(),
    cid: p.string().length(100),
    fileHash: p.string().length(64),
    reason: p.string().length(200),
    fileBytes: p.integer().nullable(),
    imageBytes: p.integer().nullable(),
    pinnedAt: p.datetime().onCreate(() => new Date()),
    lastUploadedAt: p.datetime().onCreate(() => new Date()),
    unpinnedAt: p.datetime().nullable(),
    unpinReason: p.string().length(200).nullable(),
  },
});
export type Pin = InstanceType<typeof Pin.class>;

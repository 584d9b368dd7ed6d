import Type from "typebox";
import { Bytes, Nullable } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";

export const StorageRpc = {
  upload: defineRpc("storage.content.upload", {
    request: Type.Object({ file: Bytes, image: Nullable(Bytes), reason: Type.String({ maxLength: 200 }) }),
    response: Type.Object({
      fileHash: Type.String({ description: "directory CID digest, 64 upper-case hex" }),
      cid: Type.String(),
      imagePath: Nullable(Type.String()),
    }),
    timeoutMs: 60_000,
  }),
  remove: defineRpc("storage.content.remove", {
    request: Type.Object({ fileHash: Type.String() }),
    response: Type.Boolean(),
  }),
  read: defineRpc("storage.content.read", {
    request: Type.Object({ fileHash: Type.String() }),
    response: Bytes,
    timeoutMs: 30_000,
  }),
} as const;

export const StorageEvents = {
  pinned: defineEvent("storage.content.pinned", Type.Object({ fileHash: Type.String(), cid: Type.String() })),
  unpinned: defineEvent(
    "storage.content.unpinned",
    Type.Object({ fileHash: Type.String(), cid: Type.String() }),
  ),
} as const;

import { type Bus, type StreamServer, type StreamSink, serveStream } from "@fundraise/bus";
import { StorageRpc, StorageUpload, type Uploaded } from "@fundraise/protocol";
import type { ContentService } from "../content/content.service.ts";

/**
 * The storage service's RPC surface: each descriptor straight to its use case (rules in content/ and
 * upload/). Uploads are streams (`StorageUpload`): each one gets a session of its own, on this instance.
 */
export async function serveStorageRpc(
  bus: Bus,
  content: ContentService,
  uploads: { newSession: () => StreamSink<{ reason: string }, Uploaded>; idleMs: number },
): Promise<StreamServer> {
  await bus.serve(StorageRpc.remove, ({ fileHash, reason }, ctx) =>
    content.remove(fileHash, reason ?? "removed", ctx),
  );
  await bus.serve(StorageRpc.read, ({ fileHash }) => content.read(fileHash));
  return serveStream(bus, StorageUpload, { idleMs: uploads.idleMs, open: () => uploads.newSession() });
}

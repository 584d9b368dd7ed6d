import type { Bus } from "@fundraise/bus";
import { StorageRpc } from "@fundraise/protocol";
import type { ContentService } from "../content/content.service.ts";

/** The storage service's RPC surface: each descriptor straight to its use case (rules in content/). */
export async function serveStorageRpc(bus: Bus, content: ContentService): Promise<void> {
  await bus.serve(StorageRpc.pin, ({ reason, ...added }, ctx) => content.pin(added, reason, ctx));
  await bus.serve(StorageRpc.remove, ({ fileHash, reason }, ctx) =>
    content.remove(fileHash, reason ?? "removed", ctx),
  );
}

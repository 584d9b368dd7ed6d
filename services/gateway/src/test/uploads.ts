import { type Bus, serveStream } from "@fundraise/bus";
import { type ContentStream, StorageUpload, type UploadEntry } from "@fundraise/protocol";

/** What one upload brought to the recording receiver: its entries' bytes and how it ended. */
export interface RecordedUpload {
  entries: Partial<Record<UploadEntry, Buffer>>;
  outcome: "open" | "finished" | "aborted";
}

/**
 * A storage service stand-in FOR THE GATEWAY'S TESTS: receives uploads (protocol StorageUpload, the real
 * `serveStream`) on the harness's bus and records their bytes; a finish answers a fixed reference. The
 * real storage service is tested in services/storage, and end to end in e2e/.
 */
export async function recordUploads(bus: Bus) {
  const uploads = new Map<string, RecordedUpload>();
  const server = await serveStream(bus, StorageUpload, {
    idleMs: 60_000,
    open: (_request, _ctx, streamId) => {
      const upload: RecordedUpload = { entries: {}, outcome: "open" };
      uploads.set(streamId, upload);
      return {
        async part(entry, bytes) {
          const name = entry as UploadEntry;
          upload.entries[name] = Buffer.concat([upload.entries[name] ?? Buffer.alloc(0), bytes]);
        },
        async finish() {
          upload.outcome = "finished";
          return { fileHash: "A".repeat(64), cid: "QmRecorded", imagePath: null };
        },
        abort() {
          upload.outcome = "aborted";
        },
      };
    },
  });
  return {
    uploads,
    /** Streams open on the stand-in now. */
    open: () => server.open,
    /** The upload a write's content names. */
    of(content: ContentStream | null): RecordedUpload | undefined {
      return content ? uploads.get(content.stream.streamId) : undefined;
    },
    /** Hex of each entry the write's content holds, for comparing requests. */
    hexOf(content: ContentStream | null): Record<string, string> | null {
      const upload = this.of(content);
      if (!upload) return null;
      return Object.fromEntries(Object.entries(upload.entries).map(([k, v]) => [k, v.toString("hex")]));
    },
  };
}

export type RecordedUploads = Awaited<ReturnType<typeof recordUploads>>;

import { type Bus, StreamWriter } from "@fundraise/bus";
import {
  type AppError,
  type ContentStream,
  ErrorCode,
  errors,
  StorageUpload,
  type UploadEntry,
} from "@fundraise/protocol";
import type { HexBodySinks } from "../plugins/hex-body.ts";
import type { HexSink } from "../plugins/hex-json.ts";

/** The body fields that carry content, and the entry of the upload each one becomes. */
export const CONTENT_FIELDS = { fileHex: "whitepaper", imageUrl: "image" } as const satisfies Record<
  string,
  UploadEntry
>;
export type ContentField = keyof typeof CONTENT_FIELDS;

/**
 * Parts sent and not yet taken by storage's add, at most: 6 of 512 KiB (`StorageUpload.partBytes`) kept
 * the add fed best in `pnpm bench:upload` (docs/decisions.md, "The upload path"), and bound what either
 * side holds of a body to 3 MiB.
 */
const WINDOW = 6;

const fieldOf = (key: string): ContentField =>
  (Object.keys(CONTENT_FIELDS) as ContentField[]).find((field) => field.toLowerCase() === key) ?? "fileHex";

/**
 * The content of one Add or Update, streamed to a storage instance while the body arrives (protocol
 * `StorageUpload`): the bytes decoded from `fileHex` and `imageUrl` go as parts of the entries
 * `whitepaper` and `image` as soon as each part is full, at most a window of them unanswered. The projects
 * service finishes the upload once it accepted the write; any other outcome aborts it (a refused or bad
 * request, a client gone), and an upload nobody ends expires on its instance. A field sent twice (in two
 * spellings) is refused: its first value may be on its way already.
 */
export class ContentUpload implements HexBodySinks {
  private readonly writer: StreamWriter<typeof StorageUpload>;
  private readonly sent = new Set<ContentField>();
  private refusal: AppError | undefined;
  private aborted = false;

  constructor(bus: Bus, requestId: string) {
    this.writer = new StreamWriter(bus, StorageUpload, { open: {}, window: WINDOW, context: { requestId } });
  }

  /** Where the scanner sends a decoded value of `key` (lower case); opens the upload meanwhile. */
  open(key: string): HexSink {
    const field = fieldOf(key);
    const first = this.begin(field);
    this.writer.start();
    return {
      write: (bytes) => {
        if (first) this.writer.write(CONTENT_FIELDS[field], bytes);
      },
      end: () => undefined,
      // The route answers 400 for the field, and the upload is aborted with the answer.
      fail: () => undefined,
    };
  }

  /** Sends a field's bytes decoded once the body was read (a short value the scanner kept as text). */
  send(field: ContentField, bytes: Uint8Array): void {
    if (!this.begin(field)) return;
    for (let at = 0; at < bytes.byteLength; at += StorageUpload.partBytes) {
      this.writer.write(CONTENT_FIELDS[field], bytes.subarray(at, at + StorageUpload.partBytes));
    }
  }

  ready(): Promise<void> | undefined {
    if (this.refusal) return Promise.reject(this.refusal);
    return this.writer.ready();
  }

  /** Waits until every part is answered: the content the write carries, null when none was sent. */
  async handOver(): Promise<ContentStream | null> {
    if (this.refusal) throw this.refusal;
    const stream = await this.writer.end();
    return stream && { stream, file: this.sent.has("fileHex"), image: this.sent.has("imageUrl") };
  }

  /** The request ended without a finished write: the upload is dropped. Once; never throws. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    void this.writer.abort();
  }

  /** False for a field already sent: refused, its bytes dropped. */
  private begin(field: ContentField): boolean {
    if (this.sent.has(field)) {
      this.refusal ??= errors.validation(ErrorCode.VALIDATION_FAILED, `${field} is given more than once.`);
      return false;
    }
    this.sent.add(field);
    return true;
  }
}

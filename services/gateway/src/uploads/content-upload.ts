import { type AppError, type ContentRef, ErrorCode, errors } from "@fundraise/protocol";
import type { HexBodySinks } from "../plugins/hex-body.ts";
import type { HexSink } from "../plugins/hex-decoder.ts";
import type { DirectoryAdd, Entry } from "./directory-add.ts";

/** The body fields that carry content, and the directory entry each one becomes. */
export const CONTENT_FIELDS = { fileHex: "whitepaper", imageUrl: "image" } as const satisfies Record<
  string,
  Entry
>;
export type ContentField = keyof typeof CONTENT_FIELDS;

/** How many decoded parts of 256 KiB may wait for the node before the body is paused (1 MiB). */
export const WINDOW = 4;
export const PART_BYTES = 256 * 1024;

const fieldOf = (key: string): ContentField =>
  (Object.keys(CONTENT_FIELDS) as ContentField[]).find((field) => field.toLowerCase() === key) ?? "fileHex";

/**
 * The content of one Add or Update, added to IPFS, pinned, while the body arrives (uploads/directory-add.ts):
 * the bytes decoded from `fileHex` and `imageUrl` become the entries `whitepaper` and `image`. The write
 * then carries the directory's reference (`pinned` once handed over: a refused write's content is released
 * again, uploads/released.ts). A field sent twice (in two spellings) is refused: its first value may be on
 * the node already.
 */
export class ContentUpload implements HexBodySinks {
  private readonly sent = new Set<ContentField>();
  private refusal: AppError | undefined;
  /** The CID of the directory the node added and pinned for this write; null until then. */
  pinned: string | null = null;

  constructor(private readonly add: DirectoryAdd) {}

  /** Where the scanner sends a decoded value of `key` (lower case). */
  open(key: string): HexSink {
    const field = fieldOf(key);
    const first = this.begin(field);
    return {
      write: (bytes) => {
        if (first) this.add.part(CONTENT_FIELDS[field], bytes);
      },
      end: () => undefined,
      // The route answers 400 for the field, and the add is aborted with the answer.
      fail: () => undefined,
    };
  }

  /** Adds a field's bytes decoded once the body was read (a short value the scanner kept as text). */
  send(field: ContentField, bytes: Uint8Array): void {
    if (!this.begin(field)) return;
    if (bytes.byteLength === 0) this.add.part(CONTENT_FIELDS[field], bytes);
    for (let at = 0; at < bytes.byteLength; at += PART_BYTES) {
      this.add.part(CONTENT_FIELDS[field], bytes.subarray(at, at + PART_BYTES));
    }
  }

  ready(): Promise<void> | undefined {
    if (this.refusal) return Promise.reject(this.refusal);
    return this.add.ready();
  }

  /** Waits for the add: the content the write carries, null when the body had none. */
  async handOver(): Promise<ContentRef | null> {
    if (this.refusal) throw this.refusal;
    const content = await this.add.finish();
    this.pinned = content?.cid ?? null;
    // When it was pinned: the projects service refuses a pin too old for its memory of releases.
    return content && { ...content, pinnedAt: Date.now() };
  }

  /** The request ended without a finished write: the add is cancelled. Never throws. */
  abort(): void {
    this.add.abort(errors.validation(ErrorCode.VALIDATION_FAILED, "The request was not completed."));
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

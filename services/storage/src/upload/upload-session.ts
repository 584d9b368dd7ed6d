import type { MessageContext, StreamSink } from "@fundraise/bus";
import {
  type AppError,
  ErrorCode,
  errors,
  toAppError,
  UPLOAD_ENTRIES,
  type UploadEntry,
  type Uploaded,
} from "@fundraise/protocol";
import type { CID } from "multiformats/cid";
import { StorageErrors } from "../content/content.errors.ts";
import type { ContentService } from "../content/content.service.ts";
import { type Ipfs, translateIpfsError } from "../content/ipfs.ts";
import { Channel } from "./channel.ts";

export interface UploadSessionDeps {
  ipfs: Ipfs;
  content: ContentService;
  limits: { maxFileBytes: number; maxImageBytes: number };
  /** How long the node may take to finish the add once the last part arrived (504 beyond). */
  ipfsTimeoutMs: number;
}

const isEntry = (name: string): name is UploadEntry => (UPLOAD_ENTRIES as readonly string[]).includes(name);

/**
 * One upload (protocol `StorageUpload`): its parts, in order, feed one directory add on IPFS as they
 * arrive, entry after entry (`whitepaper`, `image`). Nothing is pinned before the finish, which ends the
 * last entry: only then can the add complete, and the content is recorded (ContentService.record). An
 * entry over its limit fails at once (413), an empty one at the finish (400); a failed or aborted upload
 * cancels its add, so a half-sent file is never pinned.
 */
export class UploadSession implements StreamSink<{ reason: string }, Uploaded> {
  private readonly cancel = new AbortController();
  /** The add's source: one item per entry, its content a channel of that entry's parts. */
  private readonly files = new Channel<{ name: UploadEntry; content: Channel<Uint8Array> }>();
  private current: { name: UploadEntry; content: Channel<Uint8Array> } | undefined;
  private readonly sizes = new Map<UploadEntry, number>();
  private added: Promise<CID> | undefined;
  private failure: AppError | undefined;

  constructor(private readonly deps: UploadSessionDeps) {}

  part(entry: string, bytes: Uint8Array): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!isEntry(entry)) return this.refuse(invalidEntry(`unknown entry "${entry}"`));
    if (this.current?.name !== entry) {
      if (this.sizes.has(entry)) return this.refuse(invalidEntry(`the ${entry} was sent already`));
      this.current?.content.end();
      this.current = { name: entry, content: new Channel() };
      this.sizes.set(entry, 0);
      this.files.push({ ...this.current }).catch(() => undefined);
      this.added ??= this.add();
    }
    const size = (this.sizes.get(entry) ?? 0) + bytes.byteLength;
    this.sizes.set(entry, size);
    const max = entry === "whitepaper" ? this.deps.limits.maxFileBytes : this.deps.limits.maxImageBytes;
    if (size > max) return this.refuse(StorageErrors.tooLarge(field(entry), max));
    return this.current.content.push(bytes);
  }

  async finish({ reason }: { reason: string }, ctx: MessageContext): Promise<Uploaded> {
    if (this.failure) throw this.failure;
    const empty = UPLOAD_ENTRIES.find(
      (entry) => this.sizes.get(entry) === 0 || (entry === "whitepaper" && !this.sizes.has(entry)),
    );
    if (empty) {
      this.fail(StorageErrors.empty(field(empty)));
      throw this.failure;
    }
    this.current?.content.end();
    this.files.end();
    const timer = setTimeout(() => this.fail(StorageErrors.timeout()), this.deps.ipfsTimeoutMs);
    let cid: CID;
    try {
      cid = await (this.added as Promise<CID>);
    } catch (error) {
      throw this.failure ?? error;
    } finally {
      clearTimeout(timer);
    }
    if (this.failure) throw this.failure;
    const imageBytes = this.sizes.get("image") ?? null;
    const fileBytes = this.sizes.get("whitepaper") ?? 0;
    return this.deps.content.record({ cid, fileBytes, imageBytes }, reason, ctx);
  }

  abort(reason: AppError): void {
    // Parts the node has not taken yet: it is the node that stopped, not the writer.
    const stalled = (this.current?.content.waiting ?? 0) > 0;
    this.fail(stalled ? StorageErrors.timeout() : reason);
  }

  /**
   * The directory add, started with the first part; it completes only once the finish ends the files. An
   * add that completes although the upload failed (the IPFS deadline passing as it answered) leaves a pin
   * without a row: not unpinned here (the same bytes may be another project's), the reconciliation
   * adopts and judges it.
   */
  private add(): Promise<CID> {
    const added = this.deps.ipfs.addDirectory(this.files, { signal: this.cancel.signal });
    added.catch((error: unknown) => this.fail(error));
    return added;
  }

  private refuse(error: AppError): Promise<never> {
    this.fail(error);
    return Promise.reject(error);
  }

  /** The first failure ends the upload: the add is cancelled before its source learns it. */
  private fail(error: unknown): void {
    if (this.failure) return;
    const failure = toAppError(translateIpfsError(error));
    this.failure = failure;
    this.cancel.abort();
    this.current?.content.fail(failure);
    this.files.fail(failure);
  }
}

const field = (entry: UploadEntry) => (entry === "whitepaper" ? "file" : "image");

const invalidEntry = (problem: string) =>
  errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid upload: ${problem}.`);

import { ContentErrors, type ContentLimits, type Ipfs, translateIpfsError } from "@fundraise/ipfs";
import { type AppError, type ContentRef, ErrorCode, errors, toAppError } from "@fundraise/protocol";
import type { CID } from "multiformats/cid";
import { Channel } from "./channel.ts";

/** The entries of a project's content directory, in the order a body may bring them. */
export type Entry = "whitepaper" | "image";

const field = (entry: Entry) => (entry === "whitepaper" ? "file" : "image");

/**
 * One directory add on IPFS fed while a request body arrives: each entry's parts go to the node as they
 * come (`whitepaper`, `image`, in the body's order), pinned when the add completes (ADR 0027: the process
 * that holds the bytes stores them; the node's GC lock keeps an add's blocks until its pin). An entry over
 * its limit fails at once (413), an empty one at the finish (400), a directory without a whitepaper is
 * never completed; a failed or aborted add is cancelled, so a half-sent file is never pinned. The content
 * of a write refused after the add completed is released again (uploads/released.ts).
 */
export class DirectoryAdd {
  private readonly cancel = new AbortController();
  /** The add's source: one item per entry, its content a channel of that entry's parts. */
  private readonly files = new Channel<{ name: Entry; content: Channel<Uint8Array> }>();
  private current: { name: Entry; content: Channel<Uint8Array> } | undefined;
  private readonly sizes = new Map<Entry, number>();
  private added: Promise<CID> | undefined;
  private lastPart: Promise<void> = Promise.resolve();
  private failure: AppError | undefined;

  constructor(
    private readonly deps: { ipfs: Ipfs; limits: ContentLimits; timeoutMs: number; window: number },
  ) {}

  /** Queues a part of `entry`; refused (and the add failed) past the entry's limit. */
  part(entry: Entry, bytes: Uint8Array): void {
    if (this.failure) return;
    if (this.current?.name !== entry) {
      if (this.sizes.has(entry)) {
        this.fail(duplicate(entry));
        return;
      }
      this.current?.content.end();
      this.current = { name: entry, content: new Channel() };
      this.sizes.set(entry, 0);
      this.files.push({ ...this.current }).catch(() => undefined);
      this.added ??= this.add();
    }
    const size = (this.sizes.get(entry) ?? 0) + bytes.byteLength;
    this.sizes.set(entry, size);
    const max = entry === "whitepaper" ? this.deps.limits.maxFileBytes : this.deps.limits.maxImageBytes;
    if (size > max) {
      this.fail(ContentErrors.tooLarge(field(entry), max));
      return;
    }
    const taken = this.current.content.push(bytes);
    taken.catch(() => undefined);
    this.lastPart = taken;
  }

  /**
   * Undefined while the node keeps up; else resolves once it took the parts queued (at most `window`
   * wait), or rejects with the add's failure: the body is read no faster than the node imports it.
   */
  ready(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    if ((this.current?.content.waiting ?? 0) < this.deps.window) return undefined;
    return this.lastPart.catch(() => Promise.reject(this.failure));
  }

  /** Ends the entries and waits for the add: the directory's reference, null when nothing was sent. */
  async finish(): Promise<ContentRef | null> {
    if (this.failure) throw this.failure;
    if (!this.added) return null;
    if (!this.sizes.has("whitepaper")) {
      this.fail(
        errors.validation(ErrorCode.VALIDATION_FAILED, "An image comes with the file: send fileHex too."),
      );
      throw this.failure;
    }
    const empty = ([...this.sizes] as [Entry, number][]).find(([, size]) => size === 0);
    if (empty) {
      this.fail(ContentErrors.empty(field(empty[0])));
      throw this.failure;
    }
    this.current?.content.end();
    this.files.end();
    const timer = setTimeout(() => this.fail(ContentErrors.timeout()), this.deps.timeoutMs);
    let cid: CID;
    try {
      cid = await this.added;
    } catch (error) {
      throw this.failure ?? error;
    } finally {
      clearTimeout(timer);
    }
    if (this.failure) throw this.failure;
    return {
      cid: cid.toString(),
      fileBytes: this.sizes.get("whitepaper") ?? null,
      imageBytes: this.sizes.get("image") ?? null,
    };
  }

  /** The body will not be used: the add is cancelled. Once; never throws. */
  abort(reason: AppError): void {
    this.fail(reason);
  }

  private add(): Promise<CID> {
    const added = this.deps.ipfs.addDirectory(this.files, { signal: this.cancel.signal, pin: true });
    added.catch((error: unknown) => this.fail(error));
    return added;
  }

  /** The first failure ends the add: it is cancelled before its source learns it. */
  private fail(error: unknown): void {
    if (this.failure) return;
    const failure = toAppError(translateIpfsError(error));
    this.failure = failure;
    this.cancel.abort();
    this.current?.content.fail(failure);
    this.files.fail(failure);
  }
}

const duplicate = (entry: Entry) =>
  errors.validation(ErrorCode.VALIDATION_FAILED, `The ${field(entry)} is given more than once.`);

import { randomBytes } from "node:crypto";
import { BACKSLASH, type HexSink, HexValueDecoder, QUOTE } from "./hex-decoder.ts";

/**
 * A JSON body read as it arrives, with the top-level string values of some keys (`fileHex`, `imageUrl`,
 * any case) decoded from hex into bytes on the way. A 10 MB file arrives as 20 MB of hex: the hex never
 * becomes a string, and the decoded bytes are not kept either: they leave in parts of `partBytes` for the
 * value's sink (the upload to storage) as soon as a part is full, so the body's memory is bounded by a
 * part, whatever the file's size. What remains of the body (names, descriptions) is parsed as JSON as
 * usual, with each decoded value replaced by a placeholder string that `HexValues.take` turns into what
 * became of it.
 *
 * A value of such a key that is not whole hex bytes is kept as the string it is when short, nothing of it
 * written (the web client sends `imageUrl` back as an IPFS path, meaning "keep the image"), and marked
 * invalid when long; either way a sink it had hears `fail`. Anything else about the JSON (syntax,
 * nesting) is left to the JSON parser: only top-level values are decoded, and only while the scanner is
 * sure of where it is.
 */

/** What became of a decoded field: its bytes went to its sink (`streamed` of them), or it was no hex. */
export type HexValue = { streamed: number } | { invalid: true };

export const HEX_PART_BYTES = 256 * 1024;

enum Where {
  /** Before the top-level value. */
  Start,
  /** Inside the top-level object, expecting a key (or its end). */
  Key,
  /** After a key, expecting `:`. */
  Colon,
  /** After `:`, expecting the value. */
  Value,
  /** In a value that is not decoded (any JSON), until its end at depth 1. */
  Other,
  /** After a top-level value, expecting `,` or `}`. */
  Next,
  /** Not a top-level object, or lost: copy everything, decode nothing. */
  Copy,
}

export class HexJsonScanner {
  private readonly token = randomBytes(9).toString("base64url");
  private readonly text: Buffer[] = [];
  private pending: number[] = [];
  private readonly values = new Map<string, HexValue>();
  private where = Where.Start;
  // String state for the parts copied as text.
  private inString = false;
  private escaped = false;
  private depth = 0;
  private key: number[] = [];
  private inKey = false;
  // The hex value being decoded (hex-decoder.ts).
  private hex: HexValueDecoder | null = null;
  private count = 0;

  /**
   * `keys`: lower-case names whose top-level string values are hex; `sinkOf`: where a value of `key`
   * goes, asked as soon as its first byte is decoded (never for a value that starts with no hex pair,
   * like an IPFS path), so that it can get ready while the first part fills.
   */
  constructor(
    private readonly keys: ReadonlySet<string>,
    private readonly sinkOf: (key: string) => HexSink,
    private readonly partBytes = HEX_PART_BYTES,
  ) {}

  get placeholderPrefix(): string {
    return `\u0000hex:${this.token}:`;
  }

  write(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    let copyFrom = 0;
    for (let i = 0; i < buf.length; i++) {
      if (this.hex?.running) {
        i = this.hex.decodeRun(buf, i);
        if (i === buf.length) break;
      }
      const byte = buf[i] as number;
      if (this.hex) {
        if (this.hex.take(byte)) continue;
        // The value ended at this quote: copying resumes after it.
        this.finishHex();
        copyFrom = i + 1;
        continue;
      }
      if (this.where === Where.Value && byte === QUOTE && this.keys.has(this.keyName())) {
        this.flush(buf, copyFrom, i);
        this.startHex(this.keyName());
        continue;
      }
      this.track(byte);
    }
    if (!this.hex) this.flush(buf, copyFrom, buf.length);
  }

  /** The JSON text to parse (decoded values replaced by placeholders) and the decoded values. */
  end(): { text: string; values: HexValues } {
    if (this.hex) this.finishHex(); // unterminated: the parser will refuse the JSON anyway
    this.flushPending();
    return { text: Buffer.concat(this.text).toString("utf8"), values: new HexValues(this.values) };
  }

  private flush(chunk: Uint8Array, from: number, to: number): void {
    if (to <= from) return;
    this.flushPending();
    this.text.push(Buffer.from(chunk.subarray(from, to)));
  }

  private flushPending(): void {
    if (this.pending.length === 0) return;
    this.text.push(Buffer.from(this.pending));
    this.pending = [];
  }

  private keyName(): string {
    return Buffer.from(this.key).toString("utf8").toLowerCase();
  }

  /** Follows the JSON structure of a byte that is copied as text. */
  private track(byte: number): void {
    if (this.where === Where.Copy) return;
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (byte === BACKSLASH) this.escaped = true;
      else if (byte === QUOTE) {
        this.inString = false;
        if (this.inKey) {
          this.inKey = false;
          this.where = Where.Colon;
        } else if (this.depth === 1 && this.where === Where.Other) {
          this.where = Where.Next;
        }
      } else if (this.inKey) {
        if (this.key.length < 256) this.key.push(byte);
      }
      return;
    }
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) return;
    switch (this.where) {
      case Where.Start:
        if (byte === 0x7b) {
          this.depth = 1;
          this.where = Where.Key;
        } else this.where = Where.Copy;
        return;
      case Where.Key:
        if (byte === QUOTE) {
          this.inString = true;
          this.inKey = true;
          this.key = [];
        } else if (byte === 0x7d)
          this.where = Where.Copy; // end of the object
        else this.where = Where.Copy;
        return;
      case Where.Colon:
        this.where = byte === 0x3a ? Where.Value : Where.Copy;
        return;
      case Where.Value:
      case Where.Other:
        this.where = Where.Other;
        if (byte === QUOTE) this.inString = true;
        else if (byte === 0x7b || byte === 0x5b) this.depth++;
        else if (byte === 0x7d || byte === 0x5d) {
          this.depth--;
          if (this.depth === 1) this.where = Where.Next;
          else if (this.depth < 1) this.where = Where.Copy;
        } else if (byte === 0x2c && this.depth === 1) this.where = Where.Key;
        return;
      case Where.Next:
        if (byte === 0x2c) this.where = Where.Key;
        else this.where = Where.Copy;
        return;
      default:
        return;
    }
  }

  private startHex(key: string): void {
    this.hex = new HexValueDecoder(key, this.sinkOf, this.partBytes);
  }

  private finishHex(): void {
    const outcome = (this.hex as HexValueDecoder).finish();
    this.hex = null;
    this.where = Where.Next;
    if ("empty" in outcome) {
      this.pending.push(QUOTE, QUOTE); // "" stays the empty string: "no file", as before
    } else if ("raw" in outcome) {
      // Not hex, and short: the string as it was sent (an IPFS path, say), for the route to judge.
      this.pending.push(QUOTE, ...outcome.raw, QUOTE);
    } else {
      this.placeholder(outcome);
    }
  }

  private placeholder(value: HexValue): void {
    const name = `${this.placeholderPrefix}${this.count++}`;
    this.values.set(name, value);
    // NUL cannot appear raw in a JSON string: the client cannot send this text by accident.
    this.pending.push(...Buffer.from(JSON.stringify(name), "utf8"));
  }
}

/** The values a scanner decoded, by placeholder. */
export class HexValues {
  constructor(private readonly values: ReadonlyMap<string, HexValue>) {}

  /** The decoded value a body string stands for, or undefined when it is an ordinary string. */
  take(value: string): HexValue | undefined {
    return this.values.get(value);
  }
}

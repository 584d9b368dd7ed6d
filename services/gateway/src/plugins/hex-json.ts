import { randomBytes } from "node:crypto";

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

/** Where a decoded value's bytes go. */
export interface HexSink {
  /** The next part of the value's bytes (at most `partBytes`), the buffer handed over. */
  write(bytes: Uint8Array): void;
  /** The value ended as whole hex bytes. */
  end(): void;
  /** The value turned out not to be whole hex bytes after its sink was asked for. */
  fail(): void;
}

/** What became of a decoded field: its bytes went to its sink (`streamed` of them), or it was no hex. */
export type HexValue = { streamed: number } | { invalid: true };

export const HEX_PART_BYTES = 256 * 1024;

const NIBBLE = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[0x41 + i] = 10 + i;
  NIBBLE[0x61 + i] = 10 + i;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Raw bytes of a value kept to fall back to the string when it turns out not to be hex. */
const FALLBACK_BYTES = 1024;

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
  // The hex value being decoded: the part being filled, and what was written before it.
  private hex: {
    key: string;
    out: Buffer;
    length: number;
    written: number;
    sink: HexSink | undefined;
    high: number;
    raw: number[] | null;
    bad: boolean;
    escaped: boolean;
  } | null = null;
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
      if (this.hex && !this.hex.bad && !this.hex.escaped) {
        i = this.decodeRun(buf, i);
        if (i === buf.length) break;
      }
      const byte = buf[i] as number;
      if (this.hex) {
        if (this.decode(byte)) continue;
        // The value ended at this quote: copying resumes after it.
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

  /**
   * Decodes a run of hex digits from `from` in one tight loop, up to the value's closing quote or a
   * backslash (left to `decode`) or the chunk's end; answers where it stopped.
   */
  private decodeRun(buf: Buffer, from: number): number {
    const hex = this.hex as NonNullable<typeof this.hex>;
    const quote = buf.indexOf(QUOTE, from);
    let stop = quote < 0 ? buf.length : quote;
    const backslash = buf.indexOf(BACKSLASH, from);
    if (backslash >= 0 && backslash < stop) stop = backslash;
    if (hex.raw) {
      if (hex.raw.length + (stop - from) > FALLBACK_BYTES) hex.raw = null;
      else for (let i = from; i < stop; i++) hex.raw.push(buf[i] as number);
    }
    let p = from;
    if (hex.high >= 0 && p < stop) {
      const low = NIBBLE[buf[p++] as number] as number;
      if (low < 0) {
        hex.bad = true;
        return stop;
      }
      this.put((hex.high << 4) | low);
      hex.high = -1;
    }
    let pairs = (stop - p) >> 1;
    while (pairs > 0) {
      // Node's own decoder, up to the part's end, on a one-byte string of at most a part's hex: it stops
      // at the first pair that is not hex (a byte above 0x7f is none), so fewer bytes written = not hex.
      const n = Math.min(pairs, hex.out.length - hex.length);
      const written = hex.out.write(buf.toString("latin1", p, p + 2 * n), hex.length, n, "hex");
      hex.length += written;
      if (written > 0) hex.sink ??= this.sinkOf(hex.key);
      if (written < n) {
        hex.bad = true;
        return stop;
      }
      p += 2 * n;
      pairs -= n;
      if (hex.length === hex.out.length) this.writePart();
    }
    if (p < stop) {
      const high = NIBBLE[buf[p] as number] as number;
      if (high < 0) hex.bad = true;
      else hex.high = high;
    }
    return stop;
  }

  /** One decoded byte into the part being filled. */
  private put(byte: number): void {
    const hex = this.hex as NonNullable<typeof this.hex>;
    hex.sink ??= this.sinkOf(hex.key);
    hex.out[hex.length++] = byte;
    if (hex.length === hex.out.length) this.writePart();
  }

  /** Hands the part to the value's sink (asked for on the first one) and starts the next. */
  private writePart(): void {
    const hex = this.hex as NonNullable<typeof this.hex>;
    if (hex.length === 0) return;
    hex.sink ??= this.sinkOf(hex.key);
    const bytes = hex.out.subarray(0, hex.length);
    // A short last part is copied: the rest of its buffer is not kept waiting for the collector.
    hex.sink.write(hex.length < hex.out.length / 2 ? Buffer.from(bytes) : bytes);
    hex.written += hex.length;
    hex.out = Buffer.allocUnsafe(this.partBytes);
    hex.length = 0;
    hex.raw = null; // written: it can no longer be taken back as the string it was
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
    this.hex = {
      key,
      out: Buffer.allocUnsafe(this.partBytes),
      length: 0,
      written: 0,
      sink: undefined,
      high: -1,
      raw: [],
      bad: false,
      escaped: false,
    };
  }

  /** Takes one byte of a hex value; false at its closing quote. */
  private decode(byte: number): boolean {
    const hex = this.hex as NonNullable<typeof this.hex>;
    if (!hex.escaped && byte === QUOTE) {
      this.finishHex();
      return false;
    }
    if (hex.raw) {
      hex.raw.push(byte);
      if (hex.raw.length > FALLBACK_BYTES) hex.raw = null;
    }
    // An escape is never hex (JSON may spell a digit as \u0030; such a value is kept only when short).
    if (hex.escaped || byte === BACKSLASH) {
      hex.escaped = !hex.escaped && byte === BACKSLASH;
      hex.bad = true;
      return true;
    }
    if (hex.bad) return true;
    const nibble = NIBBLE[byte] as number;
    if (nibble < 0) {
      hex.bad = true;
      return true;
    }
    if (hex.high < 0) {
      hex.high = nibble;
      return true;
    }
    this.put((hex.high << 4) | nibble);
    hex.high = -1;
    return true;
  }

  private finishHex(): void {
    const hex = this.hex as NonNullable<typeof this.hex>;
    const whole = !hex.bad && hex.high < 0;
    if (whole) this.writePart();
    this.hex = null;
    this.where = Where.Next;
    if (whole && hex.written === 0) {
      this.pending.push(QUOTE, QUOTE); // "" stays the empty string: "no file", as before
    } else if (whole) {
      hex.sink?.end();
      this.placeholder({ streamed: hex.written });
    } else if (hex.raw) {
      // Not hex, and short: the string as it was sent (an IPFS path, say), for the route to judge.
      hex.sink?.fail();
      this.pending.push(QUOTE, ...hex.raw, QUOTE);
    } else {
      hex.sink?.fail();
      this.placeholder({ invalid: true });
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

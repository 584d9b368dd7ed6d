import { randomBytes } from "node:crypto";

/**
 * A JSON body read as it arrives, with the top-level string values of some keys (`fileHex`, `imageUrl`,
 * any case) decoded from hex straight into bytes. A 10 MB file arrives as 20 MB of hex: read whole, it was
 * held as the raw body, as a string, as the parsed string and then as bytes, all at once. Here the hex
 * never becomes a string: each chunk is decoded and let go, and what remains of the body (names,
 * descriptions) is parsed as JSON as usual, with each decoded value replaced by a placeholder string that
 * `HexValues.take` turns back into the bytes.
 *
 * A value of such a key that is not whole hex bytes is kept as the string it is when short (the web
 * client sends `imageUrl` back as an IPFS path, meaning "keep the image") and marked invalid when long.
 * Anything else about the JSON (syntax, nesting) is left to the JSON parser: only top-level values are
 * decoded, and only while the scanner is sure of where it is.
 */

/** What a decoded field held: its bytes, or a note that it was no hex of whole bytes. */
export type HexValue = { bytes: Uint8Array } | { invalid: true };

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
  // The hex value being decoded.
  private hex: {
    out: Buffer;
    length: number;
    high: number;
    raw: number[] | null;
    bad: boolean;
    escaped: boolean;
  } | null = null;
  private count = 0;

  /** `keys`: lower-case names whose top-level string values are hex; `sizeHint`: the body's length. */
  constructor(
    private readonly keys: ReadonlySet<string>,
    private readonly sizeHint: number,
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
        this.startHex();
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
      this.ensure(1);
      hex.out[hex.length++] = (hex.high << 4) | low;
      hex.high = -1;
    }
    const pairs = (stop - p) >> 1;
    if (pairs > 0) {
      this.ensure(pairs);
      // A plain loop over a lookup table: no string per chunk, nothing left for the collector.
      const out = hex.out;
      let n = hex.length;
      const end = p + pairs * 2;
      for (; p < end; p += 2) {
        const high = NIBBLE[buf[p] as number] as number;
        const low = NIBBLE[buf[p + 1] as number] as number;
        if ((high | low) < 0) {
          hex.length = n;
          hex.bad = true;
          return stop;
        }
        out[n++] = (high << 4) | low;
      }
      hex.length = n;
    }
    if (p < stop) {
      const high = NIBBLE[buf[p] as number] as number;
      if (high < 0) hex.bad = true;
      else hex.high = high;
    }
    return stop;
  }

  private ensure(more: number): void {
    const hex = this.hex as NonNullable<typeof this.hex>;
    if (hex.length + more <= hex.out.length) return;
    const grown = Buffer.allocUnsafe(Math.max(hex.out.length * 2, hex.length + more));
    hex.out.copy(grown, 0, 0, hex.length);
    hex.out = grown;
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

  private startHex(): void {
    const capacity = Math.max(64, Math.ceil(this.sizeHint / 2));
    this.hex = {
      out: Buffer.allocUnsafe(capacity),
      length: 0,
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
    this.ensure(1);
    hex.out[hex.length++] = (hex.high << 4) | nibble;
    hex.high = -1;
    return true;
  }

  private finishHex(): void {
    const hex = this.hex as NonNullable<typeof this.hex>;
    this.hex = null;
    this.where = Where.Next;
    if (!hex.bad && hex.high < 0 && hex.length === 0) {
      this.pending.push(QUOTE, QUOTE); // "" stays the empty string: "no file", as before
    } else if (!hex.bad && hex.high < 0) {
      this.placeholder({ bytes: new Uint8Array(hex.out.buffer, hex.out.byteOffset, hex.length) });
    } else if (hex.raw) {
      // Not hex, and short: the string as it was sent (an IPFS path, say), for the route to judge.
      this.pending.push(QUOTE, ...hex.raw, QUOTE);
    } else {
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

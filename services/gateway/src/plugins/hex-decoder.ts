const NIBBLE = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[0x41 + i] = 10 + i;
  NIBBLE[0x61 + i] = 10 + i;
}

/** Where a decoded value's bytes go (hex-json.ts asks for one per value: `sinkOf`). */
export interface HexSink {
  /** The next part of the value's bytes (at most `partBytes`), the buffer handed over. */
  write(bytes: Uint8Array): void;
  /** The value ended as whole hex bytes. */
  end(): void;
  /** The value turned out not to be whole hex bytes after its sink was asked for. */
  fail(): void;
}

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
/** Raw bytes of a value kept to fall back to the string when it turns out not to be hex. */
const FALLBACK_BYTES = 1024;

/**
 * What became of a hex value at its end: `empty` (""), its bytes written to the sink (`streamed`), the raw
 * bytes of a short value that is no hex (`raw`, to copy back as the string it was), or a long one (`invalid`).
 */
export type HexOutcome = { empty: true } | { streamed: number } | { raw: number[] } | { invalid: true };

/**
 * One top-level hex string value being decoded, from after its opening quote: the bytes go to the value's
 * sink in parts of `partBytes` (the sink asked for on the first decoded byte), and the raw text is kept
 * while short, to give the string back when it turns out not to be hex.
 */
export class HexValueDecoder {
  private out: Buffer;
  private length = 0;
  private written = 0;
  private sink: HexSink | undefined;
  private high = -1;
  private raw: number[] | null = [];
  private bad = false;
  private escaped = false;

  constructor(
    private readonly key: string,
    private readonly sinkOf: (key: string) => HexSink,
    private readonly partBytes: number,
  ) {
    this.out = Buffer.allocUnsafe(partBytes);
  }

  /** Whether the next bytes can go through `decodeRun` (no escape pending, nothing found that is no hex). */
  get running(): boolean {
    return !this.bad && !this.escaped;
  }

  /**
   * Decodes a run of hex digits from `from` in one tight loop, up to the value's closing quote or a
   * backslash (left to `take`) or the chunk's end; answers where it stopped.
   */
  decodeRun(buf: Buffer, from: number): number {
    const quote = buf.indexOf(QUOTE, from);
    let stop = quote < 0 ? buf.length : quote;
    const backslash = buf.indexOf(BACKSLASH, from);
    if (backslash >= 0 && backslash < stop) stop = backslash;
    if (this.raw) {
      if (this.raw.length + (stop - from) > FALLBACK_BYTES) this.raw = null;
      else for (let i = from; i < stop; i++) this.raw.push(buf[i] as number);
    }
    let p = from;
    if (this.high >= 0 && p < stop) {
      const low = NIBBLE[buf[p++] as number] as number;
      if (low < 0) {
        this.bad = true;
        return stop;
      }
      this.put((this.high << 4) | low);
      this.high = -1;
    }
    let pairs = (stop - p) >> 1;
    while (pairs > 0) {
      // Node's own decoder, up to the part's end, on a one-byte string of at most a part's hex: it stops
      // at the first pair that is not hex (a byte above 0x7f is none), so fewer bytes written = not hex.
      const n = Math.min(pairs, this.out.length - this.length);
      const written = this.out.write(buf.toString("latin1", p, p + 2 * n), this.length, n, "hex");
      this.length += written;
      if (written > 0) this.sink ??= this.sinkOf(this.key);
      if (written < n) {
        this.bad = true;
        return stop;
      }
      p += 2 * n;
      pairs -= n;
      if (this.length === this.out.length) this.writePart();
    }
    if (p < stop) {
      const high = NIBBLE[buf[p] as number] as number;
      if (high < 0) this.bad = true;
      else this.high = high;
    }
    return stop;
  }

  /** Takes one byte of the value; false at its closing quote (not taken: the value ended before it). */
  take(byte: number): boolean {
    if (!this.escaped && byte === QUOTE) return false;
    if (this.raw) {
      this.raw.push(byte);
      if (this.raw.length > FALLBACK_BYTES) this.raw = null;
    }
    // An escape is never hex (JSON may spell a digit as \u0030; such a value is kept only when short).
    if (this.escaped || byte === BACKSLASH) {
      this.escaped = !this.escaped && byte === BACKSLASH;
      this.bad = true;
      return true;
    }
    if (this.bad) return true;
    const nibble = NIBBLE[byte] as number;
    if (nibble < 0) {
      this.bad = true;
      return true;
    }
    if (this.high < 0) {
      this.high = nibble;
      return true;
    }
    this.put((this.high << 4) | nibble);
    this.high = -1;
    return true;
  }

  /** Ends the value (at its closing quote, or unterminated): the last part written, the sink told. */
  finish(): HexOutcome {
    const whole = !this.bad && this.high < 0;
    if (whole) this.writePart();
    if (whole && this.written === 0) return { empty: true };
    if (whole) {
      this.sink?.end();
      return { streamed: this.written };
    }
    this.sink?.fail();
    return this.raw ? { raw: this.raw } : { invalid: true };
  }

  /** One decoded byte into the part being filled. */
  private put(byte: number): void {
    this.sink ??= this.sinkOf(this.key);
    this.out[this.length++] = byte;
    if (this.length === this.out.length) this.writePart();
  }

  /** Hands the part to the value's sink (asked for on the first one) and starts the next. */
  private writePart(): void {
    if (this.length === 0) return;
    this.sink ??= this.sinkOf(this.key);
    const bytes = this.out.subarray(0, this.length);
    // A short last part is copied: the rest of its buffer is not kept waiting for the collector.
    this.sink.write(this.length < this.out.length / 2 ? Buffer.from(bytes) : bytes);
    this.written += this.length;
    this.out = Buffer.allocUnsafe(this.partBytes);
    this.length = 0;
    this.raw = null; // written: it can no longer be taken back as the string it was
  }
}

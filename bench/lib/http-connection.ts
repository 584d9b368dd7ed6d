import { connect, type Socket } from "node:net";

/** An answer as the benchmarks need it: the status and the body (as text only when asked for). */
export interface HttpAnswer {
  status: number;
  bytes: Buffer;
  readonly body: string;
}

/**
 * One kept-alive HTTP/1.1 connection for a load generator: one request at a time, written as prepared
 * text, the answer read by its Content-Length (every answer of the gateway has one). Far cheaper per
 * request than node:http or fetch, which matters when the load shares the system's cores. Not a general
 * client: no chunked answers, no redirects, no pipelining.
 */
export class HttpConnection {
  /** What arrived and is not yet an answer: its chunks, joined once an answer is complete. */
  private chunks: Buffer[] = [];
  private length = 0;
  /** The answer being read: where its body ends, once its head arrived. */
  private bodyEnd: number | undefined;
  private bodyStart = 0;
  private status = 0;
  private pending: { resolve: (answer: HttpAnswer) => void; reject: (error: Error) => void } | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.length += chunk.length;
      this.parse();
    });
    const fail = (error: Error) => {
      const pending = this.pending;
      this.pending = undefined;
      pending?.reject(error);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("the connection closed")));
  }

  static open(host: string, port: number): Promise<HttpConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port }, () => {
        socket.off("error", reject);
        resolve(new HttpConnection(socket));
      });
      socket.once("error", reject);
    });
  }

  /** The request's text: a JSON body when given one, and any other headers. */
  static request(
    method: string,
    host: string,
    path: string,
    json?: string,
    headers: Record<string, string> = {},
  ): string {
    const extra = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    if (json === undefined) return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;
    return (
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}Content-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
    );
  }

  send(request: string): Promise<HttpAnswer> {
    if (this.pending) return Promise.reject(new Error("one request at a time"));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(request);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  // A large answer arrives in many chunks: they are joined once, when its last byte is in, not on every
  // chunk (which copies a 449 KiB answer about four times over).
  private parse(): void {
    if (!this.pending || this.chunks.length === 0) return;
    if (this.bodyEnd === undefined) {
      const buffered = this.joined();
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buffered.toString("latin1", 0, end);
      const status = Number(head.slice(9, 12));
      // A 304 or 204 has no body, whatever its headers say.
      const length = status === 304 || status === 204 ? ["", "0"] : /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (!length) {
        this.socket.destroy(new Error(`an answer without Content-Length: ${head}`));
        return;
      }
      this.status = status;
      this.bodyStart = end + 4;
      this.bodyEnd = end + 4 + Number(length[1]);
    }
    if (this.length < this.bodyEnd) return;
    const buffered = this.joined();
    const bytes = buffered.subarray(this.bodyStart, this.bodyEnd);
    const rest = buffered.subarray(this.bodyEnd);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.length = rest.length;
    this.bodyEnd = undefined;
    const { resolve } = this.pending;
    this.pending = undefined;
    resolve({
      status: this.status,
      bytes,
      get body() {
        return bytes.toString("utf8");
      },
    });
  }

  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.length)];
    return this.chunks[0] as Buffer;
  }
}

import { connect, type Socket } from "node:net";

/** An answer as the benchmarks need it: the status and the body as text. */
export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * One kept-alive HTTP/1.1 connection for a load generator: one request at a time, written as prepared
 * text, the answer read by its Content-Length (every answer of the gateway has one). Far cheaper per
 * request than node:http or fetch, which matters when the load shares the system's cores. Not a general
 * client: no chunked answers, no redirects, no pipelining.
 */
export class HttpConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private pending: { resolve: (answer: HttpAnswer) => void; reject: (error: Error) => void } | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
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

  /** The request's text: a JSON body when given one. */
  static request(method: string, host: string, path: string, json?: string): string {
    if (json === undefined) return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    return (
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
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

  private parse(): void {
    const end = this.buffered.indexOf("\r\n\r\n");
    if (end < 0 || !this.pending) return;
    const head = this.buffered.toString("latin1", 0, end);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) {
      this.socket.destroy(new Error(`an answer without Content-Length: ${head}`));
      return;
    }
    const bodyEnd = end + 4 + Number(length[1]);
    if (this.buffered.length < bodyEnd) return;
    const body = this.buffered.toString("utf8", end + 4, bodyEnd);
    this.buffered = this.buffered.subarray(bodyEnd);
    const { resolve } = this.pending;
    this.pending = undefined;
    resolve({ status, body });
  }
}

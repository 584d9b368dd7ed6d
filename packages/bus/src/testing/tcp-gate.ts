import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/**
 * A loopback port in front of a real server that a test opens and shuts: shut, a connection to it is
 * refused (as when the server is not running); open, it forwards to the server. Shutting it also cuts the
 * connections it forwards (as when the server goes away). The local servers themselves stay up for the
 * other test files that use them.
 */
export interface TcpGate {
  readonly port: number;
  /** Starts forwarding (listens on `port`). */
  open(): Promise<void>;
  /** Stops listening and cuts every forwarded connection. */
  shut(): Promise<void>;
}

/** A gate in front of `target`, shut until `open()`. */
export async function createTcpGate(target: { host?: string; port: number }): Promise<TcpGate> {
  const port = await freeLoopbackPort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  return {
    port,
    async open() {
      if (server) return;
      const listening = createServer((client) => {
        const upstream = tcpConnect(target.port, target.host ?? "127.0.0.1");
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on("error", () => undefined);
          socket.on("close", () => {
            sockets.delete(socket);
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream);
        upstream.pipe(client);
      });
      await new Promise<void>((resolve, reject) => {
        listening.once("error", reject);
        listening.listen(port, "127.0.0.1", () => resolve());
      });
      server = listening;
    },
    async shut() {
      const listening = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (listening) await new Promise<void>((resolve) => listening.close(() => resolve()));
    },
  };
}

/** A loopback port nobody listens on right now. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

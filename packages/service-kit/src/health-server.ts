import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What a process says about itself on its internal port. */
export interface HealthSource {
  /** Ready to take work: the bus is connected and the service's own conditions hold. */
  readiness(): { ready: boolean; detail?: Record<string, unknown> };
  /** Prometheus text exposition lines (without a trailing newline is fine). */
  metrics(): string | Promise<string>;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The internal port of a service that has no HTTP of its own (orchestrator probes and Prometheus):
 * - `GET /healthz`: 200 while the process runs (liveness: restart only a stuck process);
 * - `GET /readyz`: 200 `{ ready: true, … }` or 503 `{ ready: false, … }` with the reasons;
 * - `GET /metrics`: Prometheus text.
 * Anything else is 404. It never reaches outside the pod/container network unless `host` says so.
 */
export async function startHealthServer(options: {
  port: number;
  host: string;
  source: HealthSource;
}): Promise<HealthServer> {
  const server: Server = createServer(async (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(405, "application/json", JSON.stringify({ error: "method not allowed" }));
      return;
    }
    try {
      if (path === "/healthz") {
        send(200, "application/json", JSON.stringify({ alive: true }));
      } else if (path === "/readyz") {
        const { ready, detail } = options.source.readiness();
        send(ready ? 200 : 503, "application/json", JSON.stringify({ ready, ...detail }));
      } else if (path === "/metrics") {
        const text = await options.source.metrics();
        send(200, "text/plain; version=0.0.4", text.endsWith("\n") ? text : `${text}\n`);
      } else {
        send(404, "application/json", JSON.stringify({ error: `no route ${path}` }));
      }
    } catch (err) {
      send(500, "application/json", JSON.stringify({ error: (err as Error).message }));
    }
  });
  // Probes are short requests; an idle keep-alive socket must not hold the shutdown open.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Where the subscription says how it goes (a pino logger fits). */
export interface HeadsLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface NewHeads {
  /** Resolves at the next new head the node announces, or never while it announces none. */
  next(): Promise<void>;
  close(): void;
}

/** The node's WebSocket endpoint for its JSON-RPC URL: anvil, geth and most providers serve both on one port. */
export function webSocketUrlOf(rpcUrl: string): string {
  const url = new URL(rpcUrl);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  return url.toString();
}

/**
 * A `newHeads` subscription (`eth_subscribe`) where the node offers one: the indexer wakes as soon as a block
 * is announced instead of at its next poll. Where none is offered (no WebSocket, or the method refused), or
 * while the socket is down, nothing is announced and polling alone goes on; the socket is tried again after
 * `retryMs`. Announcements only wake the loop: what it indexes is still read over JSON-RPC.
 */
export function subscribeNewHeads(options: { rpcUrl: string; log: HeadsLog; retryMs?: number }): NewHeads {
  const { log } = options;
  const retryMs = options.retryMs ?? 10_000;
  const url = webSocketUrlOf(options.rpcUrl);
  // One promise for everyone waiting for the next head: an idle loop asks at every poll, and those asks
  // must not pile up while no block comes.
  let nextHead: { promise: Promise<void>; resolve: () => void } | undefined;
  let socket: WebSocket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let announced = false;

  const wake = () => {
    nextHead?.resolve();
    nextHead = undefined;
  };

  function connect(): void {
    if (closed) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(url);
    } catch (err) {
      log.debug({ err }, "no new-heads subscription: polling the chain");
      return;
    }
    socket = ws;
    ws.addEventListener("open", () => {
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] }));
    });
    ws.addEventListener("message", (event) => {
      let message: { id?: unknown; method?: unknown; error?: unknown };
      try {
        message = JSON.parse(String(event.data));
      } catch {
        return;
      }
      if (message.id === 1) {
        if (message.error) {
          log.info({ error: message.error }, "the node refuses newHeads subscriptions: polling the chain");
          closed = true;
          ws.close();
        } else if (!announced) {
          announced = true;
          log.info({ url }, "subscribed to the node's new heads");
        }
      } else if (message.method === "eth_subscription") {
        wake();
      }
    });
    ws.addEventListener("close", () => {
      if (socket === ws) socket = undefined;
      if (!closed) timer = setTimeout(connect, retryMs);
    });
    // An error is followed by a close; the retry is scheduled there.
    ws.addEventListener("error", () => undefined);
  }

  connect();
  return {
    next() {
      if (!nextHead) {
        let resolve: () => void = () => undefined;
        const promise = new Promise<void>((r) => {
          resolve = r;
        });
        nextHead = { promise, resolve };
      }
      return nextHead.promise;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      socket?.close();
      wake();
    },
  };
}

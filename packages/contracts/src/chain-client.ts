import http from "node:http";
import https from "node:https";
import { JsonRpcApiProvider, type JsonRpcError, type JsonRpcPayload, type JsonRpcResult } from "ethers";
import { type HeadsLog, type NewHeads, subscribeNewHeads } from "./new-heads.ts";

/**
 * The one JSON-RPC client of the services that read the chain (auth's role reads and contract wallets,
 * projects' direct reads, the indexer): kept-alive HTTP connections, a timeout per request, batches in one
 * request, the indexer's log and block reads, an ethers provider for typed contracts over the same
 * connections, and the node's new-heads subscription. Every failure is a ChainRpcError that says whether
 * the node refused this request (ask for less) or failed (ask again later).
 */
export interface ChainClient {
  /** One call; its result. */
  request(method: string, params?: unknown[]): Promise<unknown>;
  /** The calls as one batch (one HTTP request), their results in order; any call failing rejects. */
  batch(calls: JsonRpcCall[]): Promise<unknown[]>;
  chainId(): Promise<number>;
  blockNumber(): Promise<number>;
  /** The head and one block (null when the chain has no such block) in one round trip. */
  headAndBlock(number: number): Promise<{ head: number; block: BlockHeader | null }>;
  /** Headers of these blocks (null where the chain has none), in one round trip. */
  blocks(numbers: number[]): Promise<(BlockHeader | null)[]>;
  getLogs(filter: LogFilter): Promise<RawLog[]>;
  /** eth_call at a block. */
  call(to: string, data: string, block: number | "latest"): Promise<string>;
  /**
   * An ethers provider over this client, for typed contracts: the chain id known (no detection), no
   * batching of its own (which stalls each call) and no cache (which hides fresh blocks).
   */
  provider(chainId: number): JsonRpcApiProvider;
  /** The node's `newHeads` announcements over its WebSocket endpoint (new-heads.ts). */
  newHeads(options: { log: HeadsLog; retryMs?: number }): NewHeads;
  /** Lets the kept-alive connections go. */
  close(): void;
}

export interface JsonRpcCall {
  method: string;
  params: unknown[];
}

/** A log as `eth_getLogs` returns it (quantities as hex strings). */
export interface RawLog {
  address: string;
  topics: string[];
  data: string;
  blockHash: string;
  blockNumber: string;
  /** Returned by recent nodes (anvil, geth ≥ 1.14); absent elsewhere. */
  blockTimestamp?: string;
  transactionHash: string;
  transactionIndex: string;
  logIndex: string;
  removed?: boolean;
}

export interface BlockHeader {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
}

export interface LogFilter {
  fromBlock: number;
  toBlock: number;
  address: string[];
  /** Topic 0 alternatives. */
  topics: string[];
}

export class ChainRpcError extends Error {
  constructor(
    message: string,
    /** true: the provider refused this request (retry with a smaller one); false: it failed. */
    readonly refused: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChainRpcError";
  }
}

/** What providers say when a log query asks for too much (Infura, Alchemy, QuickNode, geth, Erigon, ...). */
const REFUSAL =
  /range|too many|more than|limit|exceed|too large|response size|timeout|timed out|query returned/i;

const hex = (n: number) => `0x${n.toString(16)}`;
const num = (h: string) => Number.parseInt(h, 16);

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * node:http rather than fetch: the role read is on every sign-in, and fetch (undici's streams, headers and
 * abort machinery) cost the auth process about 0.6 ms of CPU per read, node:http a fraction of it.
 */
export function createChainClient(options: { url: string; timeoutMs: number }): ChainClient {
  const { timeoutMs } = options;
  const target = new URL(options.url);
  const transport = target.protocol === "https:" ? https : http;
  const agent = new transport.Agent({ keepAlive: true, maxSockets: 32 });
  const auth =
    target.username || target.password
      ? `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`
      : undefined;

  /** One HTTP request: the parsed answer. A timeout, 413, 429 or 5xx is a refusal (ask for less). */
  function post(payload: unknown): Promise<unknown> {
    const body = JSON.stringify(payload);
    return new Promise((resolve, reject) => {
      const req = transport.request(
        {
          agent,
          protocol: target.protocol,
          hostname: target.hostname.replace(/^\[|\]$/g, ""),
          port: target.port || undefined,
          path: `${target.pathname}${target.search}`,
          auth,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", fail);
          res.on("end", () => {
            clearTimeout(timer);
            const status = res.statusCode ?? 0;
            if (status !== 200) {
              const refused = status === 413 || status === 429 || status >= 500;
              return reject(new ChainRpcError(`the chain answered HTTP ${status}`, refused));
            }
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
            } catch (cause) {
              reject(new ChainRpcError("the chain's answer is not JSON", false, { cause }));
            }
          });
        },
      );
      const timer = setTimeout(
        () => req.destroy(new ChainRpcError(`the chain did not answer within ${timeoutMs} ms`, true)),
        timeoutMs,
      );
      function fail(error: Error) {
        clearTimeout(timer);
        reject(
          error instanceof ChainRpcError
            ? error
            : new ChainRpcError(`chain unreachable: ${error.message}`, false, { cause: error }),
        );
      }
      req.on("error", fail);
      req.end(body);
    });
  }

  function unwrap(method: string, answer: Answer | undefined): unknown {
    if (!answer || (answer.error === undefined && answer.result === undefined)) {
      throw new ChainRpcError(`no answer to ${method}: ${JSON.stringify(answer)?.slice(0, 200)}`, false);
    }
    if (answer.error) {
      throw new ChainRpcError(
        `${method} failed: ${answer.error.message} (${answer.error.code})`,
        answer.error.code === -32005 || REFUSAL.test(answer.error.message),
      );
    }
    return answer.result;
  }

  const request = async (method: string, params: unknown[] = []) =>
    unwrap(method, (await post({ jsonrpc: "2.0", id: 0, method, params })) as Answer);

  async function batch(calls: JsonRpcCall[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    const answers = await post(calls.map((c, id) => ({ jsonrpc: "2.0", id, ...c })));
    if (!Array.isArray(answers)) throw new ChainRpcError("a batch answered with a single response", false);
    const byId = new Map((answers as Answer[]).map((a) => [a?.id, a]));
    return calls.map((c, id) => unwrap(c.method, byId.get(id)));
  }

  const header = (raw: unknown): BlockHeader | null => {
    if (raw === null || raw === undefined) return null;
    const b = raw as { number: string; hash: string; parentHash: string; timestamp: string };
    return { number: num(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: num(b.timestamp) };
  };
  const getBlock = (n: number) => ({ method: "eth_getBlockByNumber", params: [hex(n), false] });

  return {
    request,
    batch,
    chainId: async () => num((await request("eth_chainId")) as string),
    blockNumber: async () => num((await request("eth_blockNumber")) as string),
    async headAndBlock(number) {
      const [head, block] = await batch([{ method: "eth_blockNumber", params: [] }, getBlock(number)]);
      return { head: num(head as string), block: header(block) };
    },
    blocks: async (numbers) => (await batch(numbers.map(getBlock))).map(header),
    getLogs: async (filter) =>
      (await request("eth_getLogs", [
        {
          fromBlock: hex(filter.fromBlock),
          toBlock: hex(filter.toBlock),
          address: filter.address,
          topics: [filter.topics],
        },
      ])) as RawLog[],
    call: async (to, data, block) =>
      (await request("eth_call", [{ to, data }, block === "latest" ? block : hex(block)])) as string,
    provider: (chainId) => new ClientProvider(post, chainId),
    newHeads: (heads) => subscribeNewHeads({ rpcUrl: options.url, ...heads }),
    close: () => agent.destroy(),
  };
}

/** ethers' JSON-RPC provider on the client's transport (its timeout and kept-alive connections). */
class ClientProvider extends JsonRpcApiProvider {
  constructor(
    private readonly post: (payload: unknown) => Promise<unknown>,
    chainId: number,
  ) {
    super(chainId, { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
  }

  override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    // As ethers' own JsonRpcProvider: requests are dispatched once the provider is started.
    await this._start();
    return super.send(method, params);
  }

  override async _send(
    payload: JsonRpcPayload | JsonRpcPayload[],
  ): Promise<(JsonRpcResult | JsonRpcError)[]> {
    const answer = await this.post(payload);
    return (Array.isArray(answer) ? answer : [answer]) as (JsonRpcResult | JsonRpcError)[];
  }
}

/**
 * A chain that answers with another chain id than the deployment's is a configuration error (every read would
 * be of another chain): this throws, and the service does not start. An unreachable one is not: it is told
 * to `unreachable`, and the service starts.
 */
export async function checkChainId(
  client: Pick<ChainClient, "chainId">,
  expected: number,
  unreachable: (err: unknown) => void,
): Promise<void> {
  let actual: number;
  try {
    actual = await client.chainId();
  } catch (err) {
    unreachable(err);
    return;
  }
  if (actual !== expected) {
    throw new Error(`CHAIN_RPC_URL serves chain ${actual} but the deployment file is for chain ${expected}`);
  }
}

/**
 * A small EVM JSON-RPC client: exactly the calls the indexer makes, batched where it helps, with a timeout
 * per request and errors that say whether the provider refused the request itself (a range too large, too
 * many results, a time-out: ask for less) or failed (node down: ask again later).
 */

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

interface RpcResponse {
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}

export interface ChainClient {
  blockNumber(): Promise<number>;
  /** The head and one block (null when the chain has no such block) in one round trip. */
  headAndBlock(number: number): Promise<{ head: number; block: BlockHeader | null }>;
  /** Headers of these blocks (null where the chain has none), in one round trip. */
  blocks(numbers: number[]): Promise<(BlockHeader | null)[]>;
  getLogs(filter: LogFilter): Promise<RawLog[]>;
  /** eth_call at a block. */
  call(to: string, data: string, blockNumber: number): Promise<string>;
  chainId(): Promise<number>;
}

export function createChainClient(options: { url: string; timeoutMs: number }): ChainClient {
  let nextId = 1;

  async function post(body: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(options.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error).name === "TimeoutError";
      throw new ChainRpcError(
        timedOut ? `chain request timed out after ${options.timeoutMs} ms` : "chain unreachable",
        timedOut,
        { cause: error },
      );
    }
    if (!response.ok) {
      // 413 and 429 are answers about this request's size or rate: smaller requests help.
      const refused = response.status === 413 || response.status === 429 || response.status >= 500;
      throw new ChainRpcError(`chain answered HTTP ${response.status}`, refused);
    }
    return response.json();
  }

  function unwrap(method: string, answer: RpcResponse | undefined): unknown {
    if (!answer) throw new ChainRpcError(`no answer to ${method}`, false);
    if (answer.error) {
      throw new ChainRpcError(
        `${method} failed: ${answer.error.message} (${answer.error.code})`,
        answer.error.code === -32005 || REFUSAL.test(answer.error.message),
      );
    }
    return answer.result;
  }

  async function call(method: string, params: unknown[]): Promise<unknown> {
    const answer = (await post({ jsonrpc: "2.0", id: nextId++, method, params })) as RpcResponse;
    return unwrap(method, answer);
  }

  async function batch(calls: { method: string; params: unknown[] }[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    const first = nextId;
    nextId += calls.length;
    const body = calls.map((c, i) => ({ jsonrpc: "2.0", id: first + i, method: c.method, params: c.params }));
    const answers = (await post(body)) as RpcResponse[];
    if (!Array.isArray(answers)) throw new ChainRpcError("batch answered with a single response", false);
    const byId = new Map(answers.map((a) => [a.id, a]));
    return calls.map((c, i) => unwrap(c.method, byId.get(first + i)));
  }

  const header = (raw: unknown): BlockHeader | null => {
    if (raw === null || raw === undefined) return null;
    const b = raw as { number: string; hash: string; parentHash: string; timestamp: string };
    return { number: num(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: num(b.timestamp) };
  };
  const getBlock = (n: number) => ({ method: "eth_getBlockByNumber", params: [hex(n), false] });

  return {
    async blockNumber() {
      return num((await call("eth_blockNumber", [])) as string);
    },
    async headAndBlock(number) {
      const [head, block] = await batch([{ method: "eth_blockNumber", params: [] }, getBlock(number)]);
      return { head: num(head as string), block: header(block) };
    },
    async blocks(numbers) {
      return (await batch(numbers.map(getBlock))).map(header);
    },
    async getLogs(filter) {
      return (await call("eth_getLogs", [
        {
          fromBlock: hex(filter.fromBlock),
          toBlock: hex(filter.toBlock),
          address: filter.address,
          topics: [filter.topics],
        },
      ])) as RawLog[];
    },
    async call(to, data, blockNumber) {
      return (await call("eth_call", [{ to, data }, hex(blockNumber)])) as string;
    },
    async chainId() {
      return num((await call("eth_chainId", [])) as string);
    },
  };
}

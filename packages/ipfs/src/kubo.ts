import { isAppError } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import type { CID } from "multiformats/cid";
import type { IpfsSettings } from "./config.ts";
import { ContentErrors } from "./errors.ts";

/**
 * Kubo's default `ipfs add`, passed explicitly on every add (rules.md §4.5, ADR 0022): a node
 * with other `Import.*` settings still gives the CIDs the chain and the original system know. The pin is
 * the caller's choice (`addDirectory`'s `pin`: the gateway pins what it adds, ADR 0027).
 */
export const KUBO_ADD_OPTIONS = {
  cidVersion: 0,
  rawLeaves: false,
  chunker: "size-262144",
  hashAlg: "sha2-256",
  trickle: false,
} as const;

/** The files of a directory add, each with its bytes whole or as they arrive. */
export type AddSource =
  | Iterable<{ name: string; content: Uint8Array | AsyncIterable<Uint8Array> }>
  | AsyncIterable<{ name: string; content: Uint8Array | AsyncIterable<Uint8Array> }>;

/** `hello world\n` under Kubo's defaults: the start-up check. */
export const SELF_CHECK = { content: "hello world\n", cid: "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o" };

/**
 * What the gateway (add pinned, cat, unpin a refused write's content) and the storage service (pin,
 * unpin, inventory) need of IPFS. One implementation: a Kubo RPC API through kubo-rpc-client.
 */
export interface Ipfs {
  /**
   * Adds the files as one directory (`ipfs add --wrap-with-directory`), not pinned unless `pin`; answers
   * its CID. Files and their content may arrive as they come (async iterables): the node imports them as
   * they do. With a `signal`, that bounds the add instead of the IPFS timeout.
   */
  addDirectory(files: AddSource, options?: { signal?: AbortSignal; pin?: boolean }): Promise<CID>;
  /** Hashes `hello world\n` without storing it and fails unless it is Kubo's CID. */
  selfCheck(): Promise<{ version: string }>;
  /** The bytes at `/ipfs/<path>`; a block the node cannot find fails fast (404), a slow node is 504. */
  cat(path: string, maxBytes: number): Promise<Uint8Array>;
  /** Pins the CID recursively (nothing to do when it is pinned already). */
  pin(cid: CID): Promise<void>;
  /**
   * Unpins the CID; false when it was not pinned (Kubo: "not pinned or pinned indirectly"). `timeoutMs`
   * cuts it sooner than the IPFS timeout (an unpin within a release's window, release.ts).
   */
  unpin(cid: CID, options?: { timeoutMs?: number }): Promise<boolean>;
  /** The CIDs the node pins recursively (`pin ls --type=recursive`), as strings. */
  recursivePins(): Promise<string[]>;
  /** Whether the CID is a directory with a `whitepaper` entry: the shape of a project's content. */
  isProjectContent(cid: CID): Promise<boolean>;
  /**
   * Runs the node's garbage collection (`repo gc`): every block no recursive pin reaches is removed,
   * including those of unpinned adds already answered. Answers how many blocks it removed.
   */
  gc(): Promise<number>;
}

/** A kubo-rpc-client or fetch failure as the platform's error: down 503, slow 504, missing 404. */
export function translateIpfsError(error: unknown): Error {
  if (isAppError(error)) return error;
  const name = (error as { name?: string } | null)?.name;
  const message = error instanceof Error ? error.message : String(error);
  if (name === "TimeoutError" || name === "AbortError") return ContentErrors.timeout(error);
  if (name === "HTTPError") {
    if (/not found|could not find|no link named/i.test(message)) return ContentErrors.notFound(error);
    return ContentErrors.unavailable(error);
  }
  // Connection refused or reset, DNS: fetch's TypeError and friends.
  return ContentErrors.unavailable(error);
}

export function createKuboIpfs(options: Pick<IpfsSettings, "url" | "timeoutMs" | "readTimeoutMs">): Ipfs {
  // kubo-rpc-client 7.1.0 ignores its own `timeout` option: every call gets an AbortSignal instead.
  const client = create({ url: options.url });
  const deadline = (ms: number) => ({ signal: AbortSignal.timeout(Math.max(1, Math.ceil(ms))) });
  const guard = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw translateIpfsError(error);
    }
  };

  return {
    addDirectory: (files, add = {}) =>
      guard(async () => {
        let root: CID | undefined;
        const source = (async function* () {
          for await (const f of files) yield { path: f.name, content: f.content };
        })();
        for await (const entry of client.addAll(source, {
          ...KUBO_ADD_OPTIONS,
          pin: add.pin ?? false,
          wrapWithDirectory: true,
          ...(add.signal ? { signal: add.signal } : deadline(options.timeoutMs)),
        })) {
          if (entry.path === "") root = entry.cid;
        }
        if (root === undefined) throw ContentErrors.unavailable(new Error("add answered no directory"));
        return root;
      }),

    async selfCheck() {
      const { version, cid } = await guard(async () => {
        const { version } = await client.version(deadline(options.timeoutMs));
        const { cid } = await client.add(new TextEncoder().encode(SELF_CHECK.content), {
          ...KUBO_ADD_OPTIONS,
          pin: false,
          onlyHash: true,
          ...deadline(options.timeoutMs),
        });
        return { version, cid: cid.toString() };
      });
      // Not an IPFS failure to retry: the node works, and would give other CIDs than Kubo's defaults.
      if (cid !== SELF_CHECK.cid) {
        throw new Error(
          `IPFS at ${options.url} hashes "hello world\\n" to ${cid} with Kubo's default import options, ` +
            `not ${SELF_CHECK.cid}: its import settings differ, so its CIDs would not match the chain's.`,
        );
      }
      return { version };
    },

    cat: (path, maxBytes) =>
      guard(async () => {
        const chunks: Uint8Array[] = [];
        let size = 0;
        for await (const chunk of client.cat(path, deadline(options.readTimeoutMs))) {
          size += chunk.byteLength;
          if (size > maxBytes) throw ContentErrors.unavailable(new Error(`content over ${maxBytes} bytes`));
          chunks.push(chunk);
        }
        return Buffer.concat(chunks, size);
      }),

    pin: (cid) =>
      guard(async () => {
        await client.pin.add(cid, { recursive: true, ...deadline(options.timeoutMs) });
      }),

    recursivePins: () =>
      guard(async () => {
        const cids: string[] = [];
        for await (const pin of client.pin.ls({ type: "recursive", ...deadline(options.timeoutMs) })) {
          cids.push(pin.cid.toString());
        }
        return cids;
      }),

    async isProjectContent(cid) {
      try {
        // One byte of `<cid>/whitepaper`: the node answers it, or refuses the path (no such link, not a
        // directory, a directory there); only a node that is down or slow is an error.
        const bytes = client.cat(`/ipfs/${cid}/whitepaper`, {
          length: 1,
          ...deadline(options.readTimeoutMs),
        });
        for await (const _ of bytes) break;
        return true;
      } catch (error) {
        // Only the node's word on the shape says "not a project's": a failure (500 of a node in trouble,
        // a block it cannot find) is an error, or its pin would be passed over for good as foreign.
        const message = error instanceof Error ? error.message : "";
        const shape = /no link named|not a directory|is a directory|not a file|not unixfs/i.test(message);
        if ((error as { name?: string } | null)?.name === "HTTPError" && shape) return false;
        throw translateIpfsError(error);
      }
    },

    gc: () =>
      guard(async () => {
        let removed = 0;
        for await (const result of client.repo.gc(deadline(options.timeoutMs))) {
          // Kubo answers `{ Error }` lines only with --stream-errors; a failed GC is otherwise an HTTP error.
          if (result.err) throw ContentErrors.unavailable(result.err);
          removed++;
        }
        return removed;
      }),

    unpin: (cid, unpin = {}) =>
      guard(async () => {
        try {
          await client.pin.rm(cid, deadline(unpin.timeoutMs ?? options.timeoutMs));
          return true;
        } catch (error) {
          if (/not pinned/.test(error instanceof Error ? error.message : "")) return false;
          throw error;
        }
      }),
  };
}

/**
 * Waits for the IPFS API (up to `startupWaitMs`) and checks its import settings: a node that does not hash
 * `hello world\n` to Kubo's CID would give content hashes the chain does not know, so a service refuses
 * to start on it.
 */
export async function checkIpfs(
  ipfs: Ipfs,
  waitMs: number,
  log: { warn(obj: object, msg: string): void },
): Promise<{ version: string }> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await ipfs.selfCheck();
    } catch (error) {
      const retryable = isAppError(error) && error.retryable;
      if (!retryable || Date.now() >= until) throw error;
      log.warn({ err: error }, "IPFS API not reachable yet; retrying");
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

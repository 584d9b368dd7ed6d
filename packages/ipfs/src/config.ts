import Type from "typebox";

const MiB = 1_048_576;

/** The IPFS settings of the services that talk to the node (the gateway adds and reads, storage pins). */
export const IpfsEnv = {
  IPFS_API_URL: Type.String({
    default: "http://127.0.0.1:5001",
    pattern: "^https?://",
    description: "Kubo RPC API; unset: `pnpm start` starts a local Kubo-RPC-compatible node",
  }),
  IPFS_TIMEOUT_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    maximum: 600_000,
    description: "deadline of one IPFS add, pin or unpin (504 beyond)",
  }),
  IPFS_READ_TIMEOUT_MS: Type.Integer({
    default: 10_000,
    minimum: 100,
    maximum: 600_000,
    description: "deadline of reading content back from IPFS (504 beyond)",
  }),
  IPFS_STARTUP_WAIT_MS: Type.Integer({
    default: 15_000,
    minimum: 0,
    maximum: 600_000,
    description: "how long a service waits for the IPFS API at start-up before it gives up",
  }),
  MAX_FILE_BYTES: Type.Integer({
    default: 10 * MiB,
    minimum: 1,
    maximum: 100 * MiB,
    description: "largest whitepaper in bytes (413 beyond)",
  }),
  MAX_IMAGE_BYTES: Type.Integer({
    default: 5 * MiB,
    minimum: 1,
    maximum: 100 * MiB,
    description: "largest project image in bytes (413 beyond)",
  }),
};

type IpfsValues = { [K in keyof typeof IpfsEnv]: K extends `IPFS_API_URL` ? string : number };

/** The config sections of IpfsEnv's values: the node and the content limits. */
export function ipfsSections(e: IpfsValues) {
  return {
    ipfs: {
      url: e.IPFS_API_URL,
      timeoutMs: e.IPFS_TIMEOUT_MS,
      readTimeoutMs: e.IPFS_READ_TIMEOUT_MS,
      startupWaitMs: e.IPFS_STARTUP_WAIT_MS,
    },
    limits: { maxFileBytes: e.MAX_FILE_BYTES, maxImageBytes: e.MAX_IMAGE_BYTES },
  };
}

export type IpfsSettings = ReturnType<typeof ipfsSections>["ipfs"];
export type ContentLimits = ReturnType<typeof ipfsSections>["limits"];

#!/usr/bin/env -S tsx
/**
 * Runs the Kubo-RPC stand-in (NOT Kubo) until SIGINT/SIGTERM:
 * `IPFS_NODE_DIR=.local/ipfs IPFS_NODE_PORT=5001 pnpm --filter @fundraise/ipfs-node start`.
 * Prints `IPFS_API_URL=<url>` on stdout once it listens.
 */
import { resolve } from "node:path";
import { startIpfsNode } from "./node.ts";

const node = await startIpfsNode({
  dataDir: resolve(process.env.IPFS_NODE_DIR ?? ".local/ipfs"),
  host: process.env.IPFS_NODE_HOST ?? "127.0.0.1",
  port: Number(process.env.IPFS_NODE_PORT ?? 5001),
});
process.stdout.write(`IPFS_API_URL=${node.url}\n`);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    node.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

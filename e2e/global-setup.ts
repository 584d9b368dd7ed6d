/**
 * One system for the e2e files that can share it, started on the first request for it (a file run alone
 * that keeps its own system, like start.test.ts, does not pay for it) and stopped after the run.
 * Test files run in worker processes: they reach it over a small HTTP endpoint on loopback:
 * - `GET /system`: the coordinates (plain data) and a registry-admin chain account of the caller's own;
 * - `GET /mail?to=…&timeoutMs=…`: the source of the next mail to `to` that the SMTP server received.
 */
import { createServer } from "node:http";
import { ADMIN_ROLE, confirm, createProvider, registryAt } from "@fundraise/contracts";
import { Wallet, ZeroHash } from "ethers";
import type { TestProject } from "vitest/node";
import type { SharedSystemAnswer } from "./shared.ts";
import { type System, startSystem } from "./system.ts";

export default async function setup(project: TestProject) {
  let system: Promise<System> | undefined;
  // Account 0 deployed the platform and grants the admin role; 1 … 9 are handed out in turn, one per
  // request (a run has fewer files than that; watch mode's reruns start over).
  let handedOut = 0;
  let granting: Promise<unknown> = Promise.resolve();

  // The gateway believes X-Forwarded-For: every test client calls from an address of its own (client.ts),
  // so one file's calls never count against another file's per-IP limits.
  // A second gateway replica (one more process on the same database, vhost and Redis prefix): files that
  // test what "at once, on any replica" means send one request here and the next there.
  const start = () => startSystem({ env: { TRUST_PROXY: "true" }, extraGateways: 1 });

  async function handOut(sys: System): Promise<SharedSystemAnswer> {
    const key = sys.anvil.accounts[1 + (handedOut++ % (sys.anvil.accounts.length - 1))] as string;
    const address = new Wallet(key).address;
    // The admin role to set user statuses, and its admin role to grant it to users. One grant at a time:
    // they are all sent by account 0.
    const grant = granting.then(async () => {
      const provider = createProvider(sys.anvil.url, sys.anvil.chainId);
      try {
        const registry = registryAt(
          sys.deployment.registry,
          new Wallet(sys.anvil.accounts[0] as string, provider),
        );
        await confirm(registry.getFunction("grantRole")(ZeroHash, address));
        await confirm(registry.getFunction("grantRole")(ADMIN_ROLE, address));
      } finally {
        provider.destroy();
      }
    });
    granting = grant.catch(() => {});
    await grant;
    return {
      gatewayUrl: sys.gatewayUrl,
      gatewayUrls: sys.gatewayUrls,
      anvil: { url: sys.anvil.url, chainId: sys.anvil.chainId, accounts: sys.anvil.accounts },
      deployment: sys.deployment,
      amqpUrl: sys.amqpUrl,
      redisPrefix: sys.redisPrefix,
      databaseUrl: sys.databaseUrl,
      ...(sys.ipfsUrl ? { ipfsUrl: sys.ipfsUrl } : {}),
      chainAdminKey: key,
    };
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const answer = async (): Promise<[number, string | Buffer]> => {
      if (url.pathname === "/system") {
        system ??= start();
        return [200, JSON.stringify(await handOut(await system))];
      }
      if (url.pathname === "/mail" && system) {
        const to = url.searchParams.get("to") ?? "";
        return [
          200,
          await (await system).mailbox.raw(to, Number(url.searchParams.get("timeoutMs") ?? 20_000)),
        ];
      }
      return [404, `no ${url.pathname} here`];
    };
    answer().then(
      ([status, body]) => res.writeHead(status).end(body),
      (error: Error) => res.writeHead(500).end(error.stack ?? String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  project.provide("e2eCoordinator", `http://127.0.0.1:${port}`);

  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // A failed start already stopped what it had started.
    await system?.then((sys) => sys.stop()).catch(() => {});
  };
}

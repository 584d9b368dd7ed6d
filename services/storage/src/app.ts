import type { Bus } from "@fundraise/bus";
import { isAppError } from "@fundraise/protocol";
import { type Logger, openServiceDatabase, type ServiceApp } from "@fundraise/service-kit";
import type { StorageConfig } from "./config.ts";
import { createContentService } from "./content/content.service.ts";
import { createKuboIpfs, type Ipfs } from "./content/ipfs.ts";
import { Pin } from "./content/pin.entity.ts";
import { createPinRepository, STORAGE_SCHEMA } from "./content/pin.repository.ts";
import { migrations } from "./db/migrations/index.ts";
import { serveStorageRpc } from "./rpc/index.ts";

/**
 * Waits for the IPFS API (up to `waitMs`) and checks its import settings: a node that does not hash
 * `hello world\n` to Kubo's CID would give content hashes the chain does not know, so the service refuses
 * to start on it.
 */
export async function checkIpfs(ipfs: Ipfs, waitMs: number, log: Logger): Promise<{ version: string }> {
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

/** Composition root: the only place that sees every dependency of the storage service. */
export async function startStorageApp(deps: {
  config: StorageConfig;
  log: Logger;
  bus: Bus;
}): Promise<ServiceApp> {
  const { config, log, bus } = deps;
  const ipfs = createKuboIpfs(config.ipfs);
  const { version } = await checkIpfs(ipfs, config.ipfs.startupWaitMs, log);
  log.info({ url: config.ipfs.url, version }, "IPFS API checked: Kubo's CIDs");
  const { orm, outbox, stop } = await openServiceDatabase({
    url: config.db.url,
    schema: STORAGE_SCHEMA,
    entities: [Pin],
    migrations,
    bus,
    log,
  });
  try {
    const content = createContentService({
      ipfs,
      pins: createPinRepository(() => orm.em.fork()),
      limits: config.limits,
    });
    await serveStorageRpc(bus, content);
  } catch (error) {
    await stop();
    throw error;
  }
  log.info("storage service ready");
  return { outbox, stop };
}

import { outageReason } from "@fundraise/bus";
import type { Logger } from "@fundraise/service-kit";
import pg from "pg";

/**
 * One writer per chain: a Postgres advisory lock held by the connection the writer writes on. If the
 * process dies, Postgres ends its session and frees the lock; and since every write goes through that same
 * session, a writer whose connection (hence lock) was lost cannot write anything more.
 */
export async function acquireWriterLock(options: {
  url: string;
  key: string;
  log: Logger;
  /** How often a standby asks for the lock again. */
  pollMs: number;
  /** Called between tries while another instance writes (a standby keeps its progress fresh). */
  whileWaiting: () => Promise<void>;
  /** Resolves when the service stops: give up waiting. */
  stopped: Promise<void>;
}): Promise<pg.Client | null> {
  const client = new pg.Client({ connectionString: options.url, application_name: "chain-indexer writer" });
  client.on("error", (err) => {
    // The database away: the indexing loop says so, once per burst of attempts (indexer.ts).
    const reason = outageReason(err);
    options.log.warn(reason === undefined ? { err } : { reason }, "writer connection failed");
  });
  await client.connect();
  let stop = false;
  void options.stopped.then(() => {
    stop = true;
  });
  let announced = false;
  try {
    while (!stop) {
      const { rows } = await client.query<{ locked: boolean }>(
        "select pg_try_advisory_lock(hashtext($1)) as locked",
        [options.key],
      );
      if (rows[0]?.locked) return client;
      if (!announced) {
        options.log.info({ lock: options.key }, "another instance is writing; waiting as hot standby");
        announced = true;
      }
      await options
        .whileWaiting()
        .catch((err: unknown) => options.log.debug({ err }, "standby refresh failed"));
      await Promise.race([new Promise((resolve) => setTimeout(resolve, options.pollMs)), options.stopped]);
    }
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  await client.end().catch(() => undefined);
  return null;
}

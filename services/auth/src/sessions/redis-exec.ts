import type { ChainableCommander } from "ioredis";

/** Runs a MULTI and throws the first command error (ioredis reports them per command, not by rejecting). */
export async function execAll(tx: ChainableCommander): Promise<unknown[]> {
  const results = await tx.exec();
  if (results === null) throw new Error("Redis transaction aborted");
  return results.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

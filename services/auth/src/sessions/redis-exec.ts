import { createHash } from "node:crypto";
import type { ChainableCommander, Redis } from "ioredis";

/** Runs a MULTI and throws the first command error (ioredis reports them per command, not by rejecting). */
export async function execAll(tx: ChainableCommander): Promise<unknown[]> {
  const results = await tx.exec();
  if (results === null) throw new Error("Redis transaction aborted");
  return results.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** A Lua script run by its SHA (EVALSHA, the body sent again only when Redis lost it). */
export type RedisScript = (keys: string[], args: Array<string | number>) => Promise<unknown>;

/**
 * Defines a script on the connection (ioredis `defineCommand`: EVALSHA, EVAL on NOSCRIPT). A plain
 * `eval` sends the whole body with every call and makes Redis hash it each time; the scripts of a
 * sign-in run several times per login. Scripts are atomic, like a MULTI, in one command.
 */
export function defineScript(redis: Redis, lua: string): RedisScript {
  // One name per body: the same script defined twice on a connection is the same command.
  const name = `script_${createHash("sha1").update(lua).digest("hex")}`;
  const commands = redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  if (typeof commands[name] !== "function") redis.defineCommand(name, { lua });
  const command = commands[name] as (...args: Array<string | number>) => Promise<unknown>;
  return (keys, args) => command.call(redis, keys.length, ...keys, ...args);
}

import { EVENTS, RPCS } from "@fundraise/protocol";
import { BadOptionError } from "./errors.ts";

/** The name of an `http` entry: `<METHOD> <route pattern>`. */
const HTTP_NAME = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)( \/\S*)?$/;

/** AMQP topic matching: words split on `.`, `*` is exactly one word, `#` is zero or more. */
export function topicMatches(pattern: string, routingKey: string): boolean {
  const p = pattern.split(".");
  const k = routingKey.split(".");
  const memo = new Map<string, boolean>();
  const match = (i: number, j: number): boolean => {
    const id = `${i}:${j}`;
    const hit = memo.get(id);
    if (hit !== undefined) return hit;
    let result: boolean;
    if (i === p.length) result = j === k.length;
    else if (p[i] === "#") result = match(i + 1, j) || (j < k.length && match(i, j + 1));
    else result = j < k.length && (p[i] === "*" || p[i] === k[j]) && match(i + 1, j + 1);
    memo.set(id, result);
    return result;
  };
  return match(0, 0);
}

/**
 * Whether an entry's name matches `--key`. RPC and event names match in topic syntax; an `http` entry's
 * name (`POST /Project/Add`) has no dots, so it matches `http`, its method, its whole name, or `#`.
 */
export function keyMatches(pattern: string, kind: string, name: string): boolean {
  if (kind === "http") {
    return pattern === "http" || pattern === "#" || pattern === name || name.startsWith(`${pattern} `);
  }
  return topicMatches(pattern, name);
}

/** The names `--key` may match: every RPC and event of the protocol. */
export function knownNames(): string[] {
  return [...RPCS.keys(), ...EVENTS.keys()].sort();
}

/**
 * Refuses a `--key` that matches no name of the protocol: a typo would otherwise read the whole journal and
 * print nothing. `--any-key` skips the check (names of tests, of a newer protocol).
 */
export function checkKey(pattern: string): void {
  if (pattern === "http" || HTTP_NAME.test(pattern)) return;
  const names = knownNames();
  if (names.some((name) => topicMatches(pattern, name))) return;
  throw new BadOptionError(
    `--key ${JSON.stringify(pattern)} matches no RPC or event name, nor http (or --any-key to read it anyway); known: ${names.join(", ")}`,
  );
}

/** What re-executing an RPC does: `read` only for a descriptor that says so; an unknown name may write. */
export function rpcEffect(name: string): "read" | "write" | "unknown" {
  const descriptor = RPCS.get(name);
  if (!descriptor) return "unknown";
  return descriptor.effect === "read" ? "read" : "write";
}

import { randomInt } from "node:crypto";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One of `items` at random, or undefined when there is none. */
export const pick = <T>(items: readonly T[]): T | undefined => items[randomInt(Math.max(items.length, 1))];

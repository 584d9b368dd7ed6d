import { describe, expect, it } from "vitest";
import { silentLogger } from "./logger.ts";
import { createShutdown } from "./shutdown.ts";

describe("createShutdown", () => {
  it("closes in reverse order, once, and survives a failing or hanging step", async () => {
    const order: string[] = [];
    const shutdown = createShutdown(silentLogger(), 50);
    shutdown.add("db", () => {
      order.push("db");
    });
    shutdown.add("hangs", () => new Promise(() => {}));
    shutdown.add("fails", () => {
      order.push("fails");
      throw new Error("boom");
    });
    shutdown.add("http", async () => {
      order.push("http");
    });
    await Promise.all([shutdown.run("test"), shutdown.run("again")]);
    expect(order).toEqual(["http", "fails", "db"]);
    expect(shutdown.signal.aborted).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { headNow } from "./head.ts";

// The head an admin's role change is dated by (rules.md §7.1): the node's when it answers in time, else the
// polled one, marked so that users dates the change by its time instead.
describe("headNow", () => {
  it("is the node's head when the node answers in time", async () => {
    expect(await headNow(async () => 68, 65, 300)).toEqual({ headBlock: 68, headFromNode: true });
    expect(await headNow(async () => 65, 65, 300)).toEqual({ headBlock: 65, headFromNode: true });
  });

  it("is the polled head, marked, when the node fails, is late, or answers below it", async () => {
    const polled = { headBlock: 65, headFromNode: false };
    expect(await headNow(() => Promise.reject(new Error("refused")), 65, 300)).toEqual(polled);
    expect(await headNow(() => new Promise<number>(() => {}), 65, 20)).toEqual(polled);
    expect(await headNow(async () => 60, 65, 300)).toEqual(polled);
  });
});

import { describe, expect, it } from "vitest";
import { GcLock, type Release } from "../src/rwlock.ts";

/** Resolves after pending promise callbacks have run: what was granted by then is granted. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Tracks whether a lock request has been granted yet. */
function track(request: Promise<Release>) {
  const state: { granted: boolean; release?: Release } = { granted: false };
  request.then((release) => Object.assign(state, { granted: true, release }));
  return state;
}

describe("the GC lock (exclusive for a GC, shared for adds and pins)", () => {
  it("shared holders hold it together; the exclusive waits for all of them", async () => {
    const lock = new GcLock();
    const a = track(lock.shared());
    const b = track(lock.shared());
    await settle();
    expect([a.granted, b.granted]).toEqual([true, true]);
    const gc = track(lock.exclusive());
    await settle();
    expect(gc.granted).toBe(false);
    a.release!();
    await settle();
    expect(gc.granted).toBe(false);
    b.release!();
    await settle();
    expect(gc.granted).toBe(true);
  });

  it("a shared request made while an exclusive one waits comes after it (no GC starvation)", async () => {
    const lock = new GcLock();
    const add = track(lock.shared());
    await settle();
    const gc = track(lock.exclusive());
    const later = track(lock.shared());
    await settle();
    expect([gc.granted, later.granted]).toEqual([false, false]);
    add.release!();
    await settle();
    expect([gc.granted, later.granted]).toEqual([true, false]);
    gc.release!();
    await settle();
    expect(later.granted).toBe(true);
    expect(lock.state).toEqual({ shared: 1, exclusive: false, waiting: 0 });
  });

  it("a steady stream of overlapping adds lets a waiting GC in", async () => {
    const lock = new GcLock();
    const holders = [await lock.shared(), await lock.shared()];
    const gc = track(lock.exclusive());
    // Each add that ends has a newcomer that started before it ended: without the queue, the lock would
    // never be free of adds.
    const newcomers: ReturnType<typeof track>[] = [];
    while (holders.length > 0) {
      newcomers.push(track(lock.shared()));
      holders.shift()!();
      await settle();
    }
    expect(gc.granted).toBe(true);
    expect(newcomers.some((n) => n.granted)).toBe(false);
  });

  it("one GC at a time; a release given twice counts once", async () => {
    const lock = new GcLock();
    const first = track(lock.exclusive());
    const second = track(lock.exclusive());
    await settle();
    expect([first.granted, second.granted]).toEqual([true, false]);
    first.release!();
    first.release!();
    await settle();
    expect(second.granted).toBe(true);
    expect(lock.state).toEqual({ shared: 0, exclusive: true, waiting: 0 });
  });
});

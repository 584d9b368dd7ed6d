import { describe, expect, it } from "vitest";
import {
  batchesOf,
  Coalescer,
  MAX_BATCH_BYTES,
  MAX_BATCH_ENTRIES,
  messagesOf,
  packBatch,
  RpcBatch,
  unbatch,
} from "../src/rpc-batch.ts";

/** A batch as received: its body and the properties it was published with. */
const received = (packed: ReturnType<typeof packBatch>) => ({
  content: packed.body,
  properties: packed.properties as never,
});

const item = (bytes: number) => ({ body: Buffer.alloc(bytes) });

describe("RPC batches", () => {
  it("packs entries with their own properties and bodies, and unpacks them as they were", () => {
    const packed = packBatch(RpcBatch.REQUESTS, "gateway", [
      { properties: { correlationId: "a", headers: { "x-deadline": 5 } }, body: Buffer.from("{}") },
      { properties: { correlationId: "b", headers: {} }, body: Buffer.from([0, 255]) },
    ]);
    // Read as a batch of the other kind it is one message, itself.
    expect(unbatch(received(packed), RpcBatch.REPLIES)).toEqual([received(packed)]);
    const entries = unbatch(received(packed), RpcBatch.REQUESTS);
    expect(entries).toHaveLength(2);
    expect(entries.map((e) => e.properties.correlationId)).toEqual(["a", "b"]);
    expect(entries[0]?.properties.headers).toEqual({ "x-deadline": 5 });
    expect(entries[1]?.content).toEqual(Buffer.from([0, 255]));
    expect(Buffer.isBuffer(entries[1]?.content)).toBe(true);
  });

  it("refuses a body that is not a batch", () => {
    const batch = packBatch(RpcBatch.REPLIES, "x", []);
    expect(() =>
      unbatch({ ...received(batch), content: Buffer.from("not cbor at all") }, RpcBatch.REPLIES),
    ).toThrow();
    expect(() =>
      unbatch({ ...received(batch), content: batch.body.subarray(0, 0) }, RpcBatch.REPLIES),
    ).toThrow();
    const notEntries = packBatch(RpcBatch.REPLIES, "x", [{ properties: {}, body: Buffer.from("x") }]);
    notEntries.body[1] = 0x01; // the entry's array becomes an integer
    expect(() => unbatch(received(notEntries), RpcBatch.REPLIES)).toThrow();
  });

  it(`holds at most ${MAX_BATCH_ENTRIES} entries and ${MAX_BATCH_BYTES} bytes of bodies; a larger body goes alone`, () => {
    const sizes = (items: Array<{ body: Buffer }>) => [...batchesOf(items)].map((b) => b.length);
    expect(sizes(Array.from({ length: 70 }, () => item(10)))).toEqual([32, 32, 6]);
    expect(sizes([item(40_000), item(40_000), item(10)])).toEqual([1, 2]);
    expect(sizes([item(10), item(200_000), item(10)])).toEqual([1, 1, 1]);
    expect(sizes([])).toEqual([]);
  });

  it("sends one item as the message it is, and several as batches of their kind", () => {
    const one = { properties: { correlationId: "only" }, body: Buffer.from("1") };
    expect([...messagesOf(RpcBatch.REPLIES, "users", [one])]).toEqual([
      { entries: [one], body: one.body, properties: one.properties },
    ]);
    const many = Array.from({ length: 40 }, (_, i) => ({
      properties: { correlationId: `c${i}` },
      body: Buffer.from("{}"),
    }));
    const messages = [...messagesOf(RpcBatch.REPLIES, "users", many)];
    expect(messages.map((m) => m.entries.length)).toEqual([32, 8]);
    const ids = messages.flatMap((m) =>
      unbatch({ content: m.body, properties: m.properties as never }, RpcBatch.REPLIES).map(
        (e) => e.properties.correlationId,
      ),
    );
    expect(ids).toEqual(many.map((m) => m.properties.correlationId));
  });

  it("collects what is added in one turn per key and hands it over once, at the end of the turn", async () => {
    const sent: Array<[string, number[]]> = [];
    const coalescer = new Coalescer<number>((key, items) => sent.push([key, items]));
    coalescer.add("a", 1);
    coalescer.add("b", 2);
    coalescer.add("a", 3);
    expect(sent).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([
      ["a", [1, 3]],
      ["b", [2]],
    ]);
    coalescer.add("a", 4);
    coalescer.flush();
    expect(sent.at(-1)).toEqual(["a", [4]]);
  });
});

import { randomBytes } from "node:crypto";
import { fileHashOf, KUBO_ADD_OPTIONS } from "@fundraise/ipfs";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ErrorCode, StorageErrorCode, StorageEvents, StorageRpc } from "@fundraise/protocol";
import { create } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addContent,
  expectAppError,
  type Harness,
  nodePins,
  outboxPayloads,
  pinRows,
  REAL_KUBO_URL,
  receivedEvent,
  startHarness,
  storeContent,
} from "../test/harness.ts";

const where = REAL_KUBO_URL
  ? `a real Kubo at ${REAL_KUBO_URL}`
  : "the Kubo-RPC stand-in (packages/ipfs-node, not Kubo)";
const MAX_FILE = 1_048_576;
const MAX_IMAGE = 262_144;

describe(`storage.content.* over RabbitMQ, on ${where}`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("content", {
      MAX_FILE_BYTES: String(MAX_FILE),
      MAX_IMAGE_BYTES: String(MAX_IMAGE),
    });
  });
  afterAll(async () => h?.stop());

  it("pins a whitepaper and an image the gateway added as one directory: recorded, announced", async () => {
    const file = randomBytes(600_000);
    const image = randomBytes(70_000);
    const started = performance.now();
    const answer = await storeContent(h, { file, image, reason: "project:add" });
    const ms = performance.now() - started;
    const expected = await kuboDirectoryCidOf({ whitepaper: file, image });
    expect(answer).toEqual({
      cid: expected.toString(),
      fileHash: fileHashOf(expected),
      imagePath: `/ipfs/${expected}/image`,
    });
    expect(answer.fileHash).toMatch(/^[0-9A-F]{64}$/);
    expect(ms).toBeLessThan(5000);
    const rows = (await pinRows(h.sql)).filter((r) => r.file_hash === answer.fileHash);
    expect(rows).toEqual([
      {
        cid: answer.cid,
        file_hash: answer.fileHash,
        reason: "project:add",
        unpinned_at: null,
        unpin_reason: null,
      },
    ]);
    await receivedEvent(h, StorageEvents.pinned, { fileHash: answer.fileHash, cid: answer.cid });
  });

  it("without an image the directory holds only `whitepaper`; the node pins it recursively", async () => {
    const file = randomBytes(300_000);
    const added = await addContent(h.ipfsUrl, { file, image: null });
    expect(await nodePins(h.ipfsUrl, added!.cid)).toBe(false);
    const answer = await h.client.call(StorageRpc.pin, { ...added!, fileBytes: file.length, reason: "add" });
    const expected = await kuboDirectoryCidOf({ whitepaper: file });
    expect(answer.cid).toBe(expected.toString());
    expect(answer.imagePath).toBeNull();
    expect(await nodePins(h.ipfsUrl, answer.cid)).toBe(true);
  });

  it("the same bytes twice: the same fileHash and one live row, one event", async () => {
    const file = randomBytes(1000);
    const first = await storeContent(h, { file, image: null, reason: "a" });
    const second = await storeContent(h, { file, image: null, reason: "b" });
    expect(second).toEqual(first);
    expect((await pinRows(h.sql)).filter((r) => r.file_hash === first.fileHash)).toHaveLength(1);
    const pinned = await outboxPayloads(h.sql, StorageEvents.pinned);
    expect(pinned.filter((p) => p.fileHash === first.fileHash)).toHaveLength(1);
  });

  it("remove unpins on the node and records it; a second remove answers false", async () => {
    const file = randomBytes(2000);
    const { fileHash, cid } = await storeContent(h, { file, image: null, reason: "r" });
    const ipfs = create({ url: h.ipfsUrl });
    const pinned = async () => {
      const all: string[] = [];
      for await (const pin of ipfs.pin.ls({ type: "recursive" })) all.push(pin.cid.toString());
      return all.includes(cid);
    };
    expect(await pinned()).toBe(true);
    expect(await h.client.call(StorageRpc.remove, { fileHash, reason: "project:delete" })).toBe(true);
    expect(await pinned()).toBe(false);
    const [row] = (await pinRows(h.sql)).filter((r) => r.file_hash === fileHash);
    expect(row?.unpinned_at).toBeInstanceOf(Date);
    expect(row?.unpin_reason).toBe("project:delete");
    await receivedEvent(h, StorageEvents.unpinned, { fileHash, cid });
    expect(await h.client.call(StorageRpc.remove, { fileHash })).toBe(false);
    // Uploading it again pins it again, as a new row.
    await storeContent(h, { file, image: null, reason: "again" });
    expect(
      (await pinRows(h.sql)).filter((r) => r.file_hash === fileHash && r.unpinned_at === null),
    ).toHaveLength(1);
  });

  it.skipIf(REAL_KUBO_URL !== undefined)(
    "pinning content the node does not have fails fast with 404, and records nothing",
    async () => {
      const unknown = await kuboDirectoryCidOf({ whitepaper: randomBytes(64) });
      const started = performance.now();
      await expectAppError(
        h.client.call(StorageRpc.pin, {
          cid: unknown.toString(),
          fileBytes: 64,
          imageBytes: null,
          reason: "x",
        }),
        "not_found",
        StorageErrorCode.CONTENT_NOT_FOUND,
      );
      expect(performance.now() - started).toBeLessThan(1000);
      expect((await pinRows(h.sql)).filter((r) => r.cid === unknown.toString())).toEqual([]);
    },
  );

  it("refuses what is not a project's content (400, left unpinned), sizes over the limits (413), bad ids (400)", async () => {
    // A file on its own, not a directory with a whitepaper: a CID the gateway never makes.
    const ipfs = create({ url: h.ipfsUrl });
    const { cid: bare } = await ipfs.add(randomBytes(100), { ...KUBO_ADD_OPTIONS, pin: false });
    await expectAppError(
      h.client.call(StorageRpc.pin, { cid: bare.toString(), fileBytes: 100, imageBytes: null, reason: "x" }),
      "validation",
      ErrorCode.VALIDATION_FAILED,
    );
    expect(await nodePins(h.ipfsUrl, bare.toString())).toBe(false);
    const added = (await addContent(h.ipfsUrl, { file: randomBytes(10), image: null }))!;
    await expectAppError(
      h.client.call(StorageRpc.pin, { ...added, fileBytes: MAX_FILE + 1, reason: "x" }),
      "payload_too_large",
      ErrorCode.PAYLOAD_TOO_LARGE,
    );
    await expectAppError(
      h.client.call(StorageRpc.pin, { ...added, fileBytes: 10, imageBytes: MAX_IMAGE + 1, reason: "x" }),
      "payload_too_large",
      ErrorCode.PAYLOAD_TOO_LARGE,
    );
    expect(await nodePins(h.ipfsUrl, added.cid)).toBe(false);
    for (const bad of [
      { ...added, fileBytes: 0 },
      { ...added, cid: "QmNotACid" },
      { ...added, fileBytes: null },
    ]) {
      await expectAppError(
        h.client.call(StorageRpc.pin, { ...bad, reason: "x" } as never),
        "validation",
        ErrorCode.VALIDATION_FAILED,
      );
    }
    await expectAppError(
      h.client.call(StorageRpc.remove, { fileHash: "AB" }),
      "validation",
      ErrorCode.VALIDATION_FAILED,
    );
    await expectAppError(
      h.client.call(StorageRpc.remove, { fileHash: "ab".repeat(32) }),
      "validation",
      ErrorCode.VALIDATION_FAILED,
    );
    expect((await pinRows(h.sql)).filter((r) => r.cid === added.cid)).toEqual([]);
  });
});

import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { abortStream, callInstance, finishStream, StreamWriter } from "@fundraise/bus";
import { kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ErrorCode, StorageErrorCode, StorageUpload } from "@fundraise/protocol";
import { startServiceHarness } from "@fundraise/service-kit/testing";
import { create } from "kubo-rpc-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StorageApp } from "../app.ts";
import { fileHashOf } from "../content/file-hash.ts";
import {
  expectAppError,
  type Harness,
  nodePins,
  pinRows,
  REAL_KUBO_URL,
  startHarness,
  storageOn,
  storeContent,
  streamContent,
} from "../test/harness.ts";

// Uploads as streams of parts (protocol StorageUpload) on the real storage service over RabbitMQ, on
// OUR KUBO-RPC STAND-IN (packages/ipfs-node, not Kubo) unless IPFS_API_URL names a Kubo. Uploads idle for
// 300 ms are dropped here (UPLOAD_IDLE_MS; 30 s by default).
const PART = StorageUpload.partBytes;
const MAX_FILE = 4 * PART;
let h: Harness;
beforeAll(async () => {
  h = await startHarness("upload", { UPLOAD_IDLE_MS: "300", MAX_FILE_BYTES: String(MAX_FILE) });
});
afterAll(async () => h?.stop());

const app = () => h.app as StorageApp;
const rowsOf = async (reason: string) => (await pinRows(h.sql)).filter((r) => r.reason === reason);

/** Every CID the node pins recursively. */
async function nodePinSet(): Promise<Set<string>> {
  const pins = new Set<string>();
  for await (const pin of create({ url: h.ipfsUrl }).pin.ls({ type: "recursive" }))
    pins.add(pin.cid.toString());
  return pins;
}

describe("an upload's parts feed one directory add as they arrive", () => {
  it("parts in any order, the image before the whitepaper: Kubo's CID for the directory", async () => {
    const file = randomBytes(2 * PART + 1000);
    const image = randomBytes(PART + 7);
    const ref = await h.client.call(StorageUpload.open, {});
    const parts = [
      { entry: "image", bytes: image.subarray(0, PART) },
      { entry: "image", bytes: image.subarray(PART) },
      { entry: "whitepaper", bytes: file.subarray(0, PART) },
      { entry: "whitepaper", bytes: file.subarray(PART, 2 * PART) },
      { entry: "whitepaper", bytes: file.subarray(2 * PART) },
    ];
    // Sent last to first: each waits until the ones before it arrived.
    const sent = parts
      .map((part, seq) => ({ ...part, seq }))
      .reverse()
      .map((part) => callInstance(h.client, StorageUpload.part, ref, { streamId: ref.streamId, ...part }));
    await Promise.all(sent);
    const uploaded = await finishStream(
      h.client,
      StorageUpload,
      { ...ref, parts: parts.length },
      { reason: "project:add" },
    );
    const expected = await kuboDirectoryCidOf({ whitepaper: file, image });
    expect(uploaded).toEqual({
      cid: expected.toString(),
      fileHash: fileHashOf(expected),
      imagePath: `/ipfs/${expected}/image`,
    });
    expect(await nodePins(h.ipfsUrl, expected.toString())).toBe(true);
    expect(app().openUploads()).toBe(0);
  });

  it("a whitepaper over MAX_FILE_BYTES fails at the part that passes it (413): nothing pinned or recorded", async () => {
    const before = await nodePinSet();
    await expectAppError(
      storeContent(h.client, { file: randomBytes(MAX_FILE + 1), image: null, reason: "over" }),
      "payload_too_large",
      ErrorCode.PAYLOAD_TOO_LARGE,
    );
    expect(await rowsOf("over")).toEqual([]);
    expect(await nodePinSet()).toEqual(before);
    expect(app().openUploads()).toBe(0); // the writer aborted it
  });
});

describe("an upload that is not finished leaves nothing", () => {
  it("aborted: dropped at once, its add cancelled; a finish afterwards is 503 STREAM_INTERRUPTED", async () => {
    const before = await nodePinSet();
    const streamed = await streamContent(h.client, { file: randomBytes(PART + 5), image: null });
    expect(app().openUploads()).toBe(1);
    expect(await abortStream(h.client, StorageUpload, streamed!.stream)).toBe(true);
    expect(app().openUploads()).toBe(0);
    await expectAppError(
      finishStream(h.client, StorageUpload, streamed!.stream, { reason: "after abort" }),
      "unavailable",
      ErrorCode.STREAM_INTERRUPTED,
    );
    expect(await rowsOf("after abort")).toEqual([]);
    expect(await nodePinSet()).toEqual(before);
  });

  it("abandoned mid-way (its sender stopped, or was killed): dropped after UPLOAD_IDLE_MS, nothing pinned", async () => {
    const before = await nodePinSet();
    const writer = new StreamWriter(h.client, StorageUpload, { open: {} });
    const file = randomBytes(3 * PART);
    writer.write("whitepaper", file.subarray(0, PART));
    writer.write("whitepaper", file.subarray(PART, 2 * PART));
    const stream = await writer.end(); // and nothing more: the sender is gone
    expect(app().openUploads()).toBe(1);
    await expect.poll(() => app().openUploads(), { timeout: 5000 }).toBe(0);
    await expectAppError(
      finishStream(h.client, StorageUpload, stream!, { reason: "abandoned" }),
      "unavailable",
      ErrorCode.STREAM_INTERRUPTED,
    );
    await expectAppError(
      callInstance(h.client, StorageUpload.part, stream!, {
        streamId: stream!.streamId,
        seq: 2,
        entry: "whitepaper",
        bytes: file.subarray(2 * PART),
      }),
      "unavailable",
      ErrorCode.STREAM_INTERRUPTED,
    );
    expect(await rowsOf("abandoned")).toEqual([]);
    expect(await nodePinSet()).toEqual(before);
    // The whole file, sent again, goes up.
    const again = await storeContent(h.client, { file, image: null, reason: "abandoned, then again" });
    expect(again.cid).toBe((await kuboDirectoryCidOf({ whitepaper: file })).toString());
  });
});

describe("several storage instances", () => {
  it("each upload's parts reach the instance that opened it", async () => {
    const two = await startServiceHarness({
      label: "storage_upload_two",
      services: [storageOn({ url: h.ipfsUrl }), storageOn({ url: h.ipfsUrl })],
      record: {},
    });
    try {
      const files = Array.from({ length: 8 }, (_, i) => randomBytes(2 * PART + i));
      const streams = await Promise.all(
        files.map((file) => streamContent(two.client, { file, image: null })),
      );
      expect(new Set(streams.map((s) => s!.stream.instance)).size).toBe(2);
      const uploaded = await Promise.all(
        streams.map((s) => finishStream(two.client, StorageUpload, s!.stream, { reason: "two instances" })),
      );
      for (const [i, file] of files.entries()) {
        expect(uploaded[i]?.cid).toBe((await kuboDirectoryCidOf({ whitepaper: file })).toString());
      }
    } finally {
      await two.stop();
    }
  });
});

/**
 * An HTTP proxy to the node that, once `stall` is set, takes an add's request and never answers it: a
 * node too slow to finish.
 */
async function stallingProxy(target: string) {
  const state = { stall: false };
  const server: Server = createServer((req, res) => {
    if (state.stall && req.url?.startsWith("/api/v0/add")) {
      req.resume();
      return;
    }
    const upstream = httpRequest(
      new URL(req.url ?? "/", target),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.skipIf(REAL_KUBO_URL !== undefined)("a node too slow to finish an add", () => {
  it("504 IPFS_TIMEOUT at the finish after IPFS_TIMEOUT_MS; nothing recorded", async () => {
    const proxy = await stallingProxy(h.ipfsUrl);
    const slow = await startServiceHarness({
      label: "storage_upload_slow",
      services: [storageOn(proxy, { IPFS_TIMEOUT_MS: "500" })],
      record: {},
    });
    try {
      proxy.state.stall = true;
      await expectAppError(
        storeContent(slow.client, { file: randomBytes(PART + 3), image: null, reason: "slow node" }),
        "timeout",
        StorageErrorCode.IPFS_TIMEOUT,
      );
      const { rows } = await slow.sql.query(`select 1 from storage.pin where reason = 'slow node'`);
      expect(rows).toEqual([]);
    } finally {
      await slow.stop();
      await proxy.close();
    }
  });
});

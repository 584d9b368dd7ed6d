import { randomBytes } from "node:crypto";
import { createInMemoryBus } from "@fundraise/bus/testing";
import { ContentErrors, cidOfFileHash, type Ipfs } from "@fundraise/ipfs";
import { ErrorCode, errors, ProjectsRpc } from "@fundraise/protocol";
import {
  createMemoryStore,
  type Emitted,
  type MemoryTx,
  silentLogger,
  withCommitted,
} from "@fundraise/service-kit/testing";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import type { CID } from "multiformats/cid";
import { createContentService, LIVE_PIN_INDEX } from "../content/content.service.ts";
import type { Pin } from "../content/pin.entity.ts";
import type { PinRepository, PinTx } from "../content/pin.repository.ts";
import { projectsOverBus } from "../content/projects-side.ts";
import { createReconciler } from "../content/reconcile.ts";
import { subscribeStorage } from "../subscribers/index.ts";

/**
 * FOR TESTS ONLY: the pin inventory in memory (service-kit's MemoryStore: a transaction commits as a whole
 * or not at all, one at a time, which stands for the row locks), for use-case tests without Postgres; the
 * SQL, the locks under concurrency and the advisory lock are the integration suites'. One live row per
 * fileHash is checked on `save`, as `pin_live_file_hash` would.
 */
export interface MemoryPins extends PinRepository {
  /** The committed rows, by id. */
  readonly pins: Map<number, Pin>;
  /** Events of committed transactions, oldest first. */
  readonly events: Emitted[];
  /** A committed live row, recorded `at` (a row the inventory had before the test). */
  seed(row: { cid: string; fileHash: string; reason?: string }, at: Date): Pin;
  /** The live row of this content, committed, if any. */
  liveRow(fileHash: string): Pin | undefined;
  /** Holds the advisory lock `name` as another replica would, until `release` is called. */
  holdLock(name: string): { release(): void };
}

export function createMemoryPins(): MemoryPins {
  const store = createMemoryStore<{ pins: Map<number, Pin> }>({ pins: new Map() }, (s) => ({
    pins: new Map([...s.pins].map(([id, pin]) => [id, { ...pin }])),
  }));
  const locks = new Set<string>();
  let nextId = 1;
  const newRow = (row: Parameters<PinTx["create"]>[0], at: Date): Pin =>
    ({ id: nextId++, ...row, pinnedAt: at, lastUploadedAt: at, unpinnedAt: null, unpinReason: null }) as Pin;
  const byId = (pins: Iterable<Pin>) => [...pins].sort((a, b) => a.id - b.id);
  const liveOf = (pins: Map<number, Pin>, fileHash: string) =>
    byId(pins.values()).find((pin) => pin.fileHash === fileHash && pin.unpinnedAt === null);

  function txOf({ state, emit }: MemoryTx<{ pins: Map<number, Pin> }>): PinTx {
    return {
      lockLive: async (fileHash) => liveOf(state.pins, fileHash) ?? null,
      create(row, at) {
        const pin = newRow(row, at);
        state.pins.set(pin.id, pin);
        return pin;
      },
      async save() {
        const live = byId(state.pins.values()).flatMap((pin) =>
          pin.unpinnedAt === null ? [pin.fileHash] : [],
        );
        if (new Set(live).size !== live.length) {
          const violation = Object.assign(new Error("duplicate key value violates unique constraint"), {
            code: "23505",
            constraint: LIVE_PIN_INDEX,
          });
          throw new UniqueConstraintViolationException(violation);
        }
      },
      emit: async (event, payload) => emit(event, payload),
    };
  }

  const repository: Omit<MemoryPins, "pins" | "events"> = {
    seed(row, at) {
      const pin = newRow({ reason: "seeded", fileBytes: null, imageBytes: null, ...row }, at);
      store.state.pins.set(pin.id, pin);
      return pin;
    },
    liveRow: (fileHash) => liveOf(store.state.pins, fileHash),
    holdLock(name) {
      locks.add(name);
      return { release: () => void locks.delete(name) };
    },
    transaction: (work) => store.transaction((tx) => work(txOf(tx))),
    once: (consumer, ctx, work) =>
      store.transaction(async (tx) => {
        if (!tx.claimOnce(consumer, ctx.messageId)) {
          ctx.log.debug({ messageKey: ctx.messageId }, "already processed");
          ctx.markDuplicate?.();
          return false;
        }
        await work(txOf(tx));
        return true;
      }),
    liveAmong: async (fileHashes) =>
      new Set(fileHashes.filter((fileHash) => liveOf(store.state.pins, fileHash) !== undefined)),
    live: async (afterId, limit, recordedBefore) =>
      byId(store.state.pins.values())
        .filter(
          (pin) =>
            pin.unpinnedAt === null &&
            pin.id > afterId &&
            (recordedBefore === undefined || pin.pinnedAt < recordedBefore),
        )
        .slice(0, limit)
        .map((pin) => ({ ...pin })),
    async exclusively(name, work) {
      if (locks.has(name)) return { ran: false };
      locks.add(name);
      try {
        return { ran: true, value: await work() };
      } finally {
        locks.delete(name);
      }
    },
  };
  return withCommitted(store, ["pins"], repository);
}

/** Content as the tests name it: its directory CID and fileHash. */
export interface Content {
  cid: string;
  fileHash: string;
}

/** A fresh sha2-256 CIDv0 (the node may or may not have its blocks). */
export function newContent(): Content {
  const fileHash = randomBytes(32).toString("hex").toUpperCase();
  return { cid: cidOfFileHash(fileHash).toString(), fileHash };
}

/**
 * FOR TESTS ONLY: an IPFS node in memory, not Kubo and not the Kubo-RPC stand-in: which contents it has
 * blocks of (and whether each has a project's shape), which it pins recursively, and the failures a test
 * turns on. `pin` of content it has no blocks of fails as Kubo's does (not found).
 */
export interface MemoryIpfs extends Pick<Ipfs, "pin" | "unpin" | "recursivePins" | "isProjectContent"> {
  /** CIDs pinned recursively. */
  readonly pinned: Set<string>;
  /** Every `pin` and `unpin` asked, oldest first. */
  readonly calls: string[];
  /** Content the gateway added: its blocks here, pinned unless `pin` is false; not a project's shape when `project` is false. */
  add(options?: { pin?: boolean; project?: boolean }): Content;
  /** Every call fails as a node that is away does (IPFS_UNAVAILABLE). */
  down: boolean;
  /** Unpins of these CIDs fail. */
  readonly failingUnpins: Set<string>;
}

export function createMemoryIpfs(): MemoryIpfs {
  /** CID → whether it is a project's shape (a directory with `whitepaper`). */
  const blocks = new Map<string, boolean>();
  const node: MemoryIpfs = {
    pinned: new Set(),
    calls: [],
    down: false,
    failingUnpins: new Set(),
    add({ pin = true, project = true } = {}) {
      const content = newContent();
      blocks.set(content.cid, project);
      if (pin) node.pinned.add(content.cid);
      return content;
    },
    async pin(cid: CID) {
      node.calls.push(`pin ${cid}`);
      if (node.down) throw ContentErrors.unavailable();
      if (!blocks.has(cid.toString())) throw ContentErrors.notFound();
      node.pinned.add(cid.toString());
    },
    async unpin(cid: CID) {
      node.calls.push(`unpin ${cid}`);
      if (node.down || node.failingUnpins.has(cid.toString())) throw ContentErrors.unavailable();
      return node.pinned.delete(cid.toString());
    },
    async recursivePins() {
      if (node.down) throw ContentErrors.unavailable();
      return [...node.pinned];
    },
    async isProjectContent(cid: CID) {
      if (node.down) throw ContentErrors.unavailable();
      const project = blocks.get(cid.toString());
      if (project === undefined) throw ContentErrors.notFound();
      return project;
    },
  };
  return node;
}

/**
 * A STAND-IN FOR THE PROJECTS SERVICE on the in-memory bus (as test/projects-stand-in.ts is on RabbitMQ):
 * `projects.content.held` answers those in `held`; `projects.content.release` answers held ones as such and
 * releases the others with a new version; `projects.content.release-done` logs what it is told. It keeps
 * no window and refuses no write (the projects service's own tests cover that side). `running` false: every
 * call fails as while the projects service is not running.
 */
export interface MemoryProjects {
  readonly held: Set<string>;
  readonly released: { fileHash: string; version: number; reason: string }[];
  readonly confirmed: { fileHash: string; version: number }[];
  /** The size of every `heldContent` question, oldest first. */
  readonly heldAsks: number[];
  running: boolean;
  /** Runs once `heldContent`'s answer is made, before it is sent. */
  afterHeld: (() => void) | undefined;
  /** Runs once a release is answered, before storage unpins. */
  afterRelease: (() => Promise<void>) | undefined;
}

/**
 * The storage service's use cases on memory, wired as `startStorageApp` wires them: the inventory
 * (`pins`), the node (`ipfs`), the projects service's side over an in-memory bus (`projects`), storage's
 * subscriptions on that bus, and a clock the test moves (`tick`).
 */
export async function storageOnMemory(
  options: { graceMs?: number; sweepUnrecorded?: boolean; windowMs?: number } = {},
) {
  const pins = createMemoryPins();
  const ipfs = createMemoryIpfs();
  const bus = createInMemoryBus();
  const log = silentLogger();
  let now = Date.parse("2026-12-01T12:00:00Z");
  const clock = () => now;
  let version = 0;
  const projects: MemoryProjects = {
    held: new Set(),
    released: [],
    confirmed: [],
    heldAsks: [],
    running: true,
    afterHeld: undefined,
    afterRelease: undefined,
  };
  const away = () =>
    errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "The projects service is not available.");
  await bus.serve(ProjectsRpc.heldContent, async ({ fileHashes }) => {
    if (!projects.running) throw away();
    projects.heldAsks.push(fileHashes.length);
    const held = fileHashes.filter((fileHash) => projects.held.has(fileHash));
    projects.afterHeld?.();
    return held;
  });
  await bus.serve(ProjectsRpc.releaseContent, async ({ fileHashes, reason }) => {
    if (!projects.running) throw away();
    const answer = { released: [] as { fileHash: string; version: number }[], held: [] as string[] };
    for (const fileHash of fileHashes) {
      if (projects.held.has(fileHash)) {
        answer.held.push(fileHash);
        continue;
      }
      const release = { fileHash, version: ++version };
      projects.released.push({ ...release, reason });
      answer.released.push(release);
    }
    await projects.afterRelease?.();
    return answer;
  });
  await bus.serve(ProjectsRpc.confirmRelease, async ({ releases }) => {
    if (!projects.running) throw away();
    projects.confirmed.push(...releases);
    return null;
  });

  const { releaser, heldContent } = projectsOverBus(bus);
  const content = createContentService({
    ipfs,
    pins,
    releaser,
    clock,
    ...(options.windowMs ? { windowMs: options.windowMs } : {}),
    log,
  });
  const reconciler = createReconciler({
    pins,
    content,
    heldContent,
    node: ipfs,
    graceMs: options.graceMs ?? GRACE_MS,
    sweepUnrecorded: options.sweepUnrecorded ?? true,
    clock,
    log,
  });
  await subscribeStorage(bus, content);
  return {
    pins,
    ipfs,
    bus,
    projects,
    content,
    reconciler,
    now: () => new Date(now),
    /** Moves the clock on. */
    tick(ms: number) {
      now += ms;
    },
    /** The payloads of committed events named `name`. */
    eventsNamed: (name: string) => pins.events.filter((e) => e.name === name).map((e) => e.payload),
  };
}

/** The grace period `storageOnMemory` uses unless told (ORPHAN_GRACE_MS's default). */
export const GRACE_MS = 900_000;

import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { ProjectsRpc } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit/testing";

/**
 * A STAND-IN FOR THE PROJECTS SERVICE, not the projects service: the storage package cannot start it, so
 * its tests answer the three calls storage makes of it on a bus of their own, as service `projects`:
 * `projects.content.held` (which of these a project holds: those in `held`), `projects.content.release`
 * (held ones answered as such, the others released with a new version and logged in `released`) and
 * `projects.content.release-done` (logged in `confirmed`). It keeps no window and refuses no write: the
 * projects service's own tests cover that side. Stopped, it is off the bus, and calls fail as they do
 * while the projects service is not running.
 */
export interface ProjectsStandIn {
  /** The fileHashes some project holds. */
  readonly held: Set<string>;
  /** Every release answered, oldest first. */
  readonly released: { fileHash: string; version: number; reason: string }[];
  /** Every release confirmed as unpinned, oldest first. */
  readonly confirmed: { fileHash: string; version: number }[];
  /** The size of every `heldContent` question, oldest first. */
  readonly heldAsks: number[];
  /**
   * Runs once `heldContent`'s answer is made, before it is sent: what it does (a project taking content)
   * happens between the round's question and its release.
   */
  afterHeld: ((fileHashes: string[]) => Promise<void>) | undefined;
  /** Runs before `release-done` answers: what it does happens after the unpin, before storage records it. */
  beforeConfirm: ((releases: { fileHash: string; version: number }[]) => Promise<void>) | undefined;
  readonly running: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function projectsStandIn(amqpUrl: string): ProjectsStandIn {
  let bus: AmqpBus | undefined;
  let version = 0;
  const standIn: ProjectsStandIn = {
    held: new Set(),
    released: [],
    confirmed: [],
    heldAsks: [],
    afterHeld: undefined,
    beforeConfirm: undefined,
    get running() {
      return bus !== undefined;
    },
    async start() {
      if (bus) return;
      const b = await createAmqpBus({ url: amqpUrl, service: "projects", logger: silentLogger() });
      await b.serve(ProjectsRpc.heldContent, async ({ fileHashes }) => {
        standIn.heldAsks.push(fileHashes.length);
        const held = fileHashes.filter((hash) => standIn.held.has(hash));
        await standIn.afterHeld?.(fileHashes);
        return held;
      });
      await b.serve(ProjectsRpc.releaseContent, async ({ fileHashes, reason }) => {
        const answer = { released: [] as { fileHash: string; version: number }[], held: [] as string[] };
        for (const fileHash of fileHashes) {
          if (standIn.held.has(fileHash)) {
            answer.held.push(fileHash);
            continue;
          }
          const release = { fileHash, version: ++version };
          standIn.released.push({ ...release, reason });
          answer.released.push(release);
        }
        return answer;
      });
      await b.serve(ProjectsRpc.confirmRelease, async ({ releases }) => {
        await standIn.beforeConfirm?.(releases);
        standIn.confirmed.push(...releases);
        return null;
      });
      bus = b;
    },
    async stop() {
      const b = bus;
      bus = undefined;
      await b?.close();
    },
  };
  return standIn;
}

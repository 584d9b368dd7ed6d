import type { Bus, TraceContext } from "@fundraise/bus";
import type { Releaser } from "@fundraise/ipfs";
import { ProjectsRpc } from "@fundraise/protocol";

/**
 * The projects service's side of storage's work, over the bus: the release before and after every unpin
 * (ADR 0027), on behalf of the message or round at hand, and which contents a project holds (the sweep).
 */
export function projectsOverBus(bus: Pick<Bus, "call">) {
  return {
    releaser: (ctx: TraceContext): Releaser => ({
      release: (fileHashes, reason) => bus.call(ProjectsRpc.releaseContent, { fileHashes, reason }, ctx),
      async confirm(releases) {
        await bus.call(ProjectsRpc.confirmRelease, { releases }, ctx);
      },
    }),
    heldContent: (fileHashes: string[], ctx: TraceContext) =>
      bus.call(ProjectsRpc.heldContent, { fileHashes }, ctx),
  };
}

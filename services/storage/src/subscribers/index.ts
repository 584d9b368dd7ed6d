import type { Bus } from "@fundraise/bus";
import { ProjectsEvents } from "@fundraise/protocol";
import { CONSUMER, type ContentService } from "../content/content.service.ts";

/**
 * At most this many drops handled at once: each holds a database connection (its row's lock) through the
 * release and the unpin (up to CONTENT_RELEASE_WINDOW_MS), and the pool has ten.
 */
const DROPS_AT_ONCE = 4;

/**
 * The events the storage service consumes (it answers no calls), each straight to its use case. Queues
 * are `storage.<event>`; each message is handled once (its claim in `processed_message`).
 */
export async function subscribeStorage(bus: Bus, content: ContentService): Promise<void> {
  // A project took content the gateway pinned: its live row and `pinned` event.
  await bus.subscribe(CONSUMER, ProjectsEvents.contentTaken, async (taken, ctx) => {
    await content.taken(taken, ctx);
  });
  // A project let go of content: released and unpinned unless a project holds it again. A release the
  // projects service did not answer throws (retryable): the message comes again after a delay.
  await bus.subscribe(
    CONSUMER,
    ProjectsEvents.contentDropped,
    async (dropped, ctx) => {
      await content.dropped(dropped, ctx);
    },
    { prefetch: DROPS_AT_ONCE },
  );
}

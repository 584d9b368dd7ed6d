import type { EventDescriptor } from "@fundraise/protocol";

/** The consumer name of every auth subscription (queues `auth.<event>`). */
export const CONSUMER = "auth";

/** The idempotency claim of an event's handler: once per message id, in `auth.processed_message`. */
export const claimFor = (event: EventDescriptor) => ({
  schema: "auth",
  consumer: `${CONSUMER}.${event.name}`,
});

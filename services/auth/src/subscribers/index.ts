import type { Bus } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import type { AccountChanges } from "../sessions/account-changes.ts";

/** The consumer name: queues are `auth.<event>`. */
export const CONSUMER = "auth";

/** The events the auth service consumes, each straight to its use case (sessions/account-changes.ts). */
export async function subscribeAuth(bus: Bus, accounts: AccountChanges): Promise<void> {
  await bus.subscribe(CONSUMER, UsersEvents.deleted, (event, ctx) => accounts.deleted(event, ctx));
  await bus.subscribe(CONSUMER, UsersEvents.roleChanged, (event, ctx) => accounts.roleChanged(event, ctx));
  await bus.subscribe(CONSUMER, UsersEvents.emailChanged, (event, ctx) => accounts.emailChanged(event, ctx));
  await bus.subscribe(CONSUMER, UsersEvents.accountChanged, (event, ctx) =>
    accounts.accountChanged(event, ctx),
  );
}

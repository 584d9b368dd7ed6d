import type { Bus } from "@fundraise/bus";
import { UsersEvents } from "@fundraise/protocol";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { ApplySessionChange } from "../sessions/session-changes.ts";
import type { AccountCopy } from "../sign-in/account-copy.ts";
import type { SignUpService } from "../sign-up/sign-up.service.ts";
import { onAccountChanged } from "./account-changed.ts";
import { CONSUMER } from "./consumer.ts";
import { onUserDeleted } from "./user-deleted.ts";
import { onUserEmailChanged } from "./user-email-changed.ts";
import { onUserRoleChanged } from "./user-role-changed.ts";

export interface SubscriberDeps {
  em: () => EntityManager;
  applySessionChange: ApplySessionChange;
  accounts: AccountCopy;
  signUp: SignUpService;
  verificationTtlHours: number;
}

/** The handlers, by event; exported so tests can drive one directly (a duplicate delivery). */
export function authSubscribers(deps: SubscriberDeps) {
  return {
    deleted: onUserDeleted(deps),
    roleChanged: onUserRoleChanged(deps),
    emailChanged: onUserEmailChanged(deps),
    accountChanged: onAccountChanged(deps),
  };
}

/** Events the auth service consumes, on queues `auth.<event>`. */
export async function subscribeAuth(bus: Bus, handlers: ReturnType<typeof authSubscribers>): Promise<void> {
  await bus.subscribe(CONSUMER, UsersEvents.deleted, handlers.deleted);
  await bus.subscribe(CONSUMER, UsersEvents.roleChanged, handlers.roleChanged);
  await bus.subscribe(CONSUMER, UsersEvents.emailChanged, handlers.emailChanged);
  await bus.subscribe(CONSUMER, UsersEvents.accountChanged, handlers.accountChanged);
}

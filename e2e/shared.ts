/**
 * The system the e2e files share: started once, on first use, by the project's global setup
 * (`global-setup.ts`), which hands each file its coordinates, a chain account of its own and the mailbox.
 */
import { inject } from "vitest";
import { type RunningSystem, remoteMailbox, type SystemCoordinates } from "./system.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Base URL of the global setup's HTTP endpoint (`/system`, `/mail`). */
    e2eCoordinator: string;
  }
}

export interface SharedSystemAnswer extends SystemCoordinates {
  /**
   * A funded anvil key no other file gets, holding the registry's admin role: chain transactions of files
   * running in parallel never race for one account's nonce.
   */
  chainAdminKey: string;
}

export type SharedSystem = RunningSystem & SharedSystemAnswer;

/**
 * The shared system: users, auth, storage, projects and gateway as processes, TRUST_PROXY on (so each
 * client calls from an address of its own, see `createClient`), a real anvil, a real SMTP server and the
 * IPFS stand-in. Starts it if no file has.
 */
export async function sharedSystem(): Promise<SharedSystem> {
  const coordinator = inject("e2eCoordinator");
  const res = await fetch(`${coordinator}/system`);
  if (res.status !== 200) throw new Error(`the shared system did not come up:\n${await res.text()}`);
  const answer = (await res.json()) as SharedSystemAnswer;
  return { ...answer, mailbox: remoteMailbox(`${coordinator}/mail`) };
}

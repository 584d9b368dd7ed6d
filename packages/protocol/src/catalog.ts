import { AuthEvents, AuthRpc } from "./auth.ts";
import { ChainEvents, ChainRpc } from "./chain.ts";
import type { EventDescriptor, RpcDescriptor } from "./message.ts";
import { ProjectsEvents, ProjectsRpc } from "./projects.ts";
import { StorageEvents, StorageRpc } from "./storage.ts";
import { UsersEvents, UsersRpc } from "./users.ts";

/**
 * Every descriptor of the protocol by name, for what meets messages by name only: the journal (which schema
 * a kept message has, what is personal in it) and its replay (whether a call only reads).
 */

const RPC_GROUPS = [AuthRpc, UsersRpc, ProjectsRpc, ChainRpc, StorageRpc];
const EVENT_GROUPS = [AuthEvents, UsersEvents, ProjectsEvents, ChainEvents, StorageEvents];

/** Names are one namespace: the journal keeps requests, replies and events side by side, by name. */
const taken = new Set<string>();

function byName<D extends RpcDescriptor | EventDescriptor>(groups: Array<Record<string, D>>): Map<string, D> {
  const map = new Map<string, D>();
  for (const descriptor of groups.flatMap((group) => Object.values(group))) {
    if (taken.has(descriptor.name)) throw new Error(`Two protocol descriptors are named ${descriptor.name}`);
    taken.add(descriptor.name);
    map.set(descriptor.name, descriptor);
  }
  return map;
}

/** Every RPC descriptor of the protocol, by name. */
export const RPCS: ReadonlyMap<string, RpcDescriptor> = byName<RpcDescriptor>(RPC_GROUPS);
/** Every event descriptor of the protocol, by name. */
export const EVENTS: ReadonlyMap<string, EventDescriptor> = byName<EventDescriptor>(EVENT_GROUPS);

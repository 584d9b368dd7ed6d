import type { ProjectDtoOut } from "./project.mapper.ts";
import { type Scope, sharedListOf } from "./visibility.ts";

/**
 * The hot lists (anonymous Get/All, GetByStatus, GetProjects/{n}; also Admin's and Viewer's "all"), kept in
 * memory per instance against the project table's version: a read asks the database for one integer and
 * answers from memory when it is unchanged. The version moves in the transaction of every change to a
 * project, so a read that starts after a write committed (the writer's own next read included) never gets
 * the old list, on any instance. Lists that depend on the caller's memberships are not cached.
 */
export interface HotReads {
  /** The list under `key` for `scope`, from memory when the table has not changed since it was loaded. */
  read(scope: Scope, key: string, load: () => Promise<ProjectDtoOut[]>): Promise<ProjectDtoOut[]>;
}

export function createHotReads(deps: { version: () => Promise<number>; maxEntries?: number }): HotReads {
  const maxEntries = deps.maxEntries ?? 64;
  const entries = new Map<string, { version: number; value: Promise<ProjectDtoOut[]> }>();

  return {
    async read(scope, key, load) {
      const shared = sharedListOf(scope);
      if (shared === null) return load();
      const cacheKey = `${shared}:${key}`;
      const version = await deps.version();
      const held = entries.get(cacheKey);
      if (held && held.version >= version) return held.value;
      // Concurrent misses share one load; a failed load is not kept.
      const value = load();
      entries.delete(cacheKey);
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
      entries.set(cacheKey, { version, value });
      value.catch(() => {
        if (entries.get(cacheKey)?.value === value) entries.delete(cacheKey);
      });
      return value;
    },
  };
}

/**
 * Which code the service processes a test starts run: their TypeScript sources through tsx (the default),
 * or the bundles `pnpm build` wrote, the ones the image runs. `pnpm test` builds, then sets
 * E2E_SERVICE_CODE=built for its server half: a system then starts in about half the time (8.5 s against
 * 14 s here, quiet), a lone service in a third of the CPU (the indexer: 1.3 s against 4 s), and the tests
 * check what ships. A file run by hand starts the sources, always current.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ServiceCode, serviceEntry } from "./processes.ts";

const root = join(import.meta.dirname, "../..");

/** E2E_SERVICE_CODE: "source" (or unset) or "built"; anything else is a mistake, said at once. */
export function testServiceCode(value = process.env.E2E_SERVICE_CODE): ServiceCode {
  if (value === undefined || value === "" || value === "source") return "source";
  if (value === "built") return "built";
  throw new Error(`E2E_SERVICE_CODE is "source" or "built", not ${JSON.stringify(value)}`);
}

/** The newest modification time of the `.ts` files under `dir` (tests included: cheap and on the safe side). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "dist") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

let checked: string | undefined;

/**
 * Throws when a service's bundle is missing or older than a source file of the workspace's packages or
 * services: a run must never test yesterday's code. Checked once per process.
 */
export function assertBundlesCurrent(services: readonly string[]): void {
  const key = [...services].sort().join(",");
  if (checked === key) return;
  const sources = Math.max(newestSource(join(root, "packages")), newestSource(join(root, "services")));
  for (const name of services) {
    const bundle = join(root, serviceEntry(name, "built"));
    let built: number;
    try {
      built = statSync(bundle).mtimeMs;
    } catch {
      throw new Error(`no bundle for ${name} (${bundle}): run pnpm build, or unset E2E_SERVICE_CODE`);
    }
    if (built < sources) {
      throw new Error(
        `the bundle of ${name} is older than the sources: run pnpm build, or unset E2E_SERVICE_CODE`,
      );
    }
  }
  checked = key;
}

/**
 * What `pnpm start` runs: instances per service (`--scale users=3,gateway=2`) and when a crashed one is
 * started again (a budget per time window, not per lifetime).
 */

/** `users=3,gateway=2` → counts by service; every service not named runs once. Throws on anything else. */
export function parseScale(text: string | undefined, services: readonly string[]): Map<string, number> {
  const counts = new Map(services.map((name) => [name, 1]));
  if (text === undefined || text.trim() === "") return counts;
  for (const part of text.split(",")) {
    const match = /^\s*([a-z][a-z-]*)\s*=\s*(\d{1,2})\s*$/.exec(part);
    const [name, count] = match ? [match[1] as string, Number(match[2])] : ["", 0];
    if (!match || !services.includes(name) || count < 1 || count > 16) {
      throw new Error(
        `--scale: expected service=count (1 to 16) separated by commas, with services among ${services.join(", ")}; got "${part.trim()}"`,
      );
    }
    counts.set(name, count);
  }
  return counts;
}

/** The name an instance goes by in the log: `users`, then `users#2`, `users#3`. */
export const instanceName = (service: string, index: number) =>
  index === 0 ? service : `${service}#${index + 1}`;

/**
 * Restarts of one instance: at most `max` crashes within `windowMs` (then the system stops: something is
 * wrong that restarting will not fix); the delay doubles with each crash in the window, up to `maxDelayMs`.
 * A crash now and then, hours apart, is restarted every time.
 */
export function restartBudget(
  options: { max?: number; windowMs?: number; baseDelayMs?: number; maxDelayMs?: number } = {},
) {
  const max = options.max ?? 5;
  const windowMs = options.windowMs ?? 60_000;
  const base = options.baseDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 8_000;
  const crashes: number[] = [];
  return {
    /** Records a crash at `now`: the delay before the restart, or null when the budget is spent. */
    crashed(now = Date.now()): number | null {
      crashes.push(now);
      while (crashes.length > 0 && (crashes[0] as number) <= now - windowMs) crashes.shift();
      if (crashes.length > max) return null;
      return Math.min(base * 2 ** (crashes.length - 1), maxDelay);
    },
  };
}

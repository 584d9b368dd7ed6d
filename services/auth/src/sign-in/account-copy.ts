import type { RequestContext } from "@fundraise/bus";
import type { UserAccount } from "@fundraise/protocol";
import type { Redis } from "ioredis";
import type { Static } from "typebox";
import { defineScript } from "../sessions/redis-exec.ts";

type Account = Static<typeof UserAccount>;

export interface AccountRead {
  account: Account | null;
}

/** An entry of an earlier layout (no account version) is not used: the users service is asked. */
const usable = (entry: Account) => typeof entry.version === "number";

/**
 * The accounts a sign-in reads, copied from the users service (docs/adr/0012-the-account-copy.md):
 * a sign-in finds its account here and the users service is asked only on a miss. Only verified accounts
 * are kept (a user who just followed the link is read again, never refused from an old copy). An entry
 * goes when the users service says the account changed (`users.user.account-changed`, from a row trigger,
 * and the role, e-mail and deletion events, whose handlers drop it before they touch the session), and
 * lives at most `ttlSeconds` in any case.
 */
export interface AccountCopy {
  /**
   * The account with this address: the copy's, else (or when `fresh`, or with the copy off) the users
   * service's, kept unless it changed meanwhile. A copy may be older than the session: sign-in compares
   * the account version with the session's and reads again with `fresh`.
   */
  byAddress(address: string, ctx: RequestContext, options?: { fresh?: boolean }): Promise<AccountRead>;
  /** Drops the address's entry; a read of the users service that began before this is not kept. */
  invalidate(address: string): Promise<void>;
}

// KEYS[1]: the entry, KEYS[2]: the address's generation (raised by every invalidation). The generation
// and the entry, if any (an entry present is of this generation: an invalidation drops it).
const LOOKUP = `
return {redis.call('GET', KEYS[2]) or '0', redis.call('GET', KEYS[1])}
`;
// ARGV: the entry, its life in seconds, the generation seen before the users service was asked.
const FILL = `
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
`;
// ARGV: how long the generation outlives the last invalidation (longer than any read of users takes).
const INVALIDATE = `
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 0
`;
const GENERATION_LIFE_SECONDS = 3600;

export function createAccountCopy(deps: {
  redis: Redis;
  prefix: string;
  ttlSeconds: number;
  /** The users service's answer (`users.user.by-address`). */
  fetch: (address: string, ctx: RequestContext) => Promise<Account | null>;
}): AccountCopy {
  const lookup = defineScript(deps.redis, LOOKUP);
  const fill = defineScript(deps.redis, FILL);
  const drop = defineScript(deps.redis, INVALIDATE);
  const keys = (address: string) => {
    const lower = address.toLowerCase();
    return [`${deps.prefix}account:${lower}`, `${deps.prefix}account-gen:${lower}`];
  };

  return {
    async byAddress(address, ctx, options = {}) {
      const keep = deps.ttlSeconds > 0;
      const where = keys(address);
      let generation: string | null = null;
      try {
        const [seen, entry] = (await lookup(where, [])) as [string, string | null];
        generation = seen;
        if (entry !== null && keep && !options.fresh) {
          const account = JSON.parse(entry) as Account;
          if (usable(account)) return { account };
        }
      } catch (cause) {
        // The copy is an optimisation: without Redis the users service still answers.
        ctx.log.warn({ err: cause }, "account copy unreadable; asking the users service");
      }
      const account = await deps.fetch(address, ctx);
      if (keep && account?.isVerified && generation !== null) {
        const entry = JSON.stringify(account);
        await fill(where, [entry, deps.ttlSeconds, generation]).catch((cause: unknown) =>
          ctx.log.warn({ err: cause }, "account copy not written"),
        );
      }
      return { account };
    },

    async invalidate(address) {
      await drop(keys(address), [GENERATION_LIFE_SECONDS]);
    },
  };
}

import type { SqlExecutor } from "@fundraise/bus";
import type { EntityManager } from "@mikro-orm/postgresql";

/**
 * The bus's SQL helpers (enqueue, processOnce) on a MikroORM entity manager, inside its transaction when
 * it has one. The helpers use each `$n` once and in order, so `?` placeholders fit (packages/bus README).
 */
export function sqlExecutorOf(em: EntityManager): SqlExecutor {
  return {
    async query(sql, params = []) {
      const rows = await em.execute<Record<string, unknown>[]>(
        sql.replace(/\$\d+/g, "?"),
        [...params],
        "all",
      );
      return { rows };
    },
  };
}

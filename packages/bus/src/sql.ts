/**
 * The least the outbox and idempotency helpers need from a database driver. A `pg` Pool, Client or
 * PoolClient fits as is. The helpers' SQL uses each `$n` placeholder once and in order, so a driver with
 * `?` placeholders (MikroORM's `execute`) fits by replacing `/\$\d+/g` with `?` (see the README).
 */
export interface SqlExecutor {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/** A connection of its own, for a transaction spanning several statements (a pg PoolClient fits). */
export interface SqlClient extends SqlExecutor {
  release(error?: Error | boolean): void;
  /** pg's LISTEN notifications; optional, the relay falls back to polling without it. */
  on?(
    event: "notification",
    listener: (message: { channel: string; payload?: string | undefined }) => void,
  ): unknown;
  on?(event: "error", listener: (error: Error) => void): unknown;
}

/** Hands out dedicated connections (a pg Pool fits). */
export interface SqlPool {
  connect(): Promise<SqlClient>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Schema names are spliced into SQL: only plain lower-case identifiers are accepted. */
export function checkSchema(schema: string): string {
  if (!IDENTIFIER.test(schema)) throw new Error(`Invalid schema name "${schema}": use [a-z_][a-z0-9_]*.`);
  return schema;
}

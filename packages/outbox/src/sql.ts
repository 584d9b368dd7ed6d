/**
 * The least the outbox and idempotency helpers need from a database driver: one statement and its rows.
 * A `pg` Pool, Client or PoolClient fits as is. The helpers' SQL uses each `$n` placeholder once and in
 * order, so a driver with `?` placeholders (MikroORM's `execute`) fits by replacing `/\$\d+/g` with `?`
 * (service-kit's `executorOf`).
 */
export interface SqlExecutor {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
  ): Promise<{ rows: R[] }>;
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

/**
 * The workspace's one pool type: statements that stand alone (`query`), a connection of its own for a
 * transaction or LISTEN (`connect`), and `end`. A `pg` Pool fits as is; service-kit's `createSqlPool`
 * makes one whose `query` turns a lost database into `unavailable`.
 */
export interface SqlPool extends SqlExecutor {
  connect(): Promise<SqlClient>;
  end(): Promise<void>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Schema names are spliced into SQL: only plain lower-case identifiers are accepted. */
export function checkSchema(schema: string): string {
  if (!IDENTIFIER.test(schema)) throw new Error(`Invalid schema name "${schema}": use [a-z_][a-z0-9_]*.`);
  return schema;
}

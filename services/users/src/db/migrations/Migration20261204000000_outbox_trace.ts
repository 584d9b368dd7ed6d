import { Migration } from "@mikro-orm/migrations";

/**
 * The `users.user.account-changed` rows the account trigger writes (Migration20261125000000) carry the
 * writing transaction's traceparent, as the rows `enqueue` writes do: their consumers continue the
 * write's trace (docs/adr/0031-tracing.md). Without tracing the setting is unset and headers stay `{}`.
 */
export class Migration20261204000000_outbox_trace extends Migration {
  override async up(): Promise<void> {
    this.addSql(`ALTER TABLE users.outbox ALTER COLUMN headers SET DEFAULT
  jsonb_strip_nulls(jsonb_build_object('traceparent', nullif(current_setting('fundraise.traceparent', true), '')))`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table users.outbox alter column headers set default '{}'::jsonb`);
  }
}

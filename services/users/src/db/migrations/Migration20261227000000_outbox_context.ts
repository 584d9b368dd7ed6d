import { Migration } from "@mikro-orm/migrations";

/**
 * The `users.user.account-changed` rows the account trigger writes (Migration20261125000000) carry the
 * writing transaction's request id and journal cause beside its traceparent, as the rows `enqueue` writes
 * do: the event is part of the request's story in the journal (docs/adr/0034-debugging-from-the-bus.md).
 * The settings are set per transaction by service-kit's `inTransaction` (outbox `withWriteContext`);
 * unset, they are left out and headers stay `{}`. The SQL is written out here: a migration is history.
 */
export class Migration20261227000000_outbox_context extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table users.outbox alter column headers set default
  jsonb_strip_nulls(jsonb_build_object(
    'traceparent', nullif(current_setting('fundraise.traceparent', true), ''),
    'requestId', nullif(current_setting('fundraise.request_id', true), ''),
    'causedBy', nullif(current_setting('fundraise.caused_by', true), '')))`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table users.outbox alter column headers set default
  jsonb_strip_nulls(jsonb_build_object('traceparent', nullif(current_setting('fundraise.traceparent', true), '')))`);
  }
}

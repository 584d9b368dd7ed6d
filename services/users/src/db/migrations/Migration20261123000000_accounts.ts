import { Migration } from "@mikro-orm/migrations";

/**
 * Sign-up expiry, role history, the local copy of project ownership, and the bus tables (outbox for the
 * events this service owes, processed_message for idempotent consumers).
 */
export class Migration20261123000000_accounts extends Migration {
  override async up(): Promise<void> {
    // Until then an unverified registration blocks its address, username and e-mail; null never expires
    // (a verified user, or one whose changed e-mail awaits its link).
    this.addSql(`alter table "user" add column "pending_until" timestamptz null`);

    this.addSql(`
      create table "role_change" (
        "id" serial primary key,
        "user_id" integer not null references "user" ("id") on delete cascade,
        "previous_role" varchar(16) not null,
        "new_role" varchar(16) not null,
        "changed_by" text not null,
        "source_tx" varchar(66) null,
        "at" timestamptz not null default now()
      )`);
    this.addSql(`create index "role_change_user_idx" on "role_change" ("user_id", "at")`);

    // Who owns which project, from the projects service's events: deleting a user must not ask it.
    // A row deleted before its creation event arrives (redelivery, retry) stays as a tombstone, so
    // a late created event cannot bring the project back.
    this.addSql(`
      create table "owned_project" (
        "project_id" integer primary key,
        "owner_id" integer null,
        "deleted_at" timestamptz null
      )`);
    this.addSql(
      `create index "owned_project_owner_idx" on "owned_project" ("owner_id") where "deleted_at" is null`,
    );

    this.addSql(`CREATE TABLE IF NOT EXISTS users.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON users.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON users.outbox (published_at) WHERE published_at IS NOT NULL;
`);
    this.addSql(`CREATE TABLE IF NOT EXISTS users.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON users.processed_message (processed_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "processed_message"`);
    this.addSql(`drop table if exists "outbox"`);
    this.addSql(`drop table if exists "owned_project"`);
    this.addSql(`drop table if exists "role_change"`);
    this.addSql(`alter table "user" drop column if exists "pending_until"`);
  }
}

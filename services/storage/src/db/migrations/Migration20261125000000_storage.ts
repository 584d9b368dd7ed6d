import { Migration } from "@mikro-orm/migrations";

/** The pin inventory, and the bus tables (outbox for the events this service owes). */
export class Migration20261125000000_storage extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "pin" (
        "id" serial primary key,
        "cid" varchar(100) not null,
        "file_hash" char(64) not null check ("file_hash" ~ '^[0-9A-F]{64}$'),
        "reason" varchar(200) not null,
        "file_bytes" integer not null,
        "image_bytes" integer null,
        "pinned_at" timestamptz not null default now(),
        "unpinned_at" timestamptz null,
        "unpin_reason" varchar(200) null
      )`);
    // Content is pinned once: a second upload of the same bytes finds the live row.
    this.addSql(
      `create unique index "pin_live_file_hash" on "pin" ("file_hash") where "unpinned_at" is null`,
    );
    this.addSql(`create index "pin_file_hash_idx" on "pin" ("file_hash")`);
    this.addSql(`CREATE TABLE IF NOT EXISTS storage.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON storage.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON storage.outbox (published_at) WHERE published_at IS NOT NULL;
`);
    this.addSql(`CREATE TABLE IF NOT EXISTS storage.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON storage.processed_message (processed_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "processed_message"`);
    this.addSql(`drop table if exists "outbox"`);
    this.addSql(`drop table if exists "pin"`);
  }
}

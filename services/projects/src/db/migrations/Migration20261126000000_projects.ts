import { Migration } from "@mikro-orm/migrations";

/**
 * Projects, their memberships (permissions) and ratings, and the bus tables (outbox for the events this
 * service owes, processed_message for idempotent consumers).
 */
export class Migration20261126000000_projects extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "project" (
        "id" serial primary key,
        "name" varchar(200) not null,
        "description" text null,
        "markdown" text not null default '',
        "file_hash" char(64) not null check ("file_hash" ~ '^[0-9A-F]{64}$'),
        "cid" text not null,
        "image_path" text null,
        "status" varchar(16) not null default 'Pending' check ("status" in ('Pending', 'Approved', 'Rejected')),
        "viewer_accepted" boolean not null default false,
        "viewer_accepted_address" varchar(42) null,
        "rating" double precision not null default 0,
        "proposer_address" varchar(42) not null,
        "is_auction_created" boolean not null default false,
        "is_auction_started" boolean not null default false,
        "auction_status" varchar(16) null check ("auction_status" in ('Off', 'Running', 'Paused', 'Ended')),
        "evaluation_block" bigint null,
        "evaluation_log_index" integer null,
        "auction_block" bigint null,
        "auction_log_index" integer null,
        "created_at" timestamptz not null,
        "updated_at" timestamptz not null
      )`);
    this.addSql(`create unique index "project_name_unique" on "project" (lower("name"))`);
    this.addSql(`create unique index "project_file_hash_unique" on "project" ("file_hash")`);
    // The review queue is counted on every Add; the top list is read on every home-page load.
    this.addSql(
      `create index "project_review_queue_idx" on "project" ("id") where "status" = 'Pending' and not "viewer_accepted"`,
    );
    this.addSql(`create index "project_top_idx" on "project" ("rating" desc, "created_at" desc, "id" desc)`);

    this.addSql(`
      create table "permission" (
        "id" serial primary key,
        "project_id" integer not null references "project" ("id") on delete cascade,
        "user_id" integer not null,
        "role" varchar(16) not null check ("role" in ('Owner', 'Co-Owner', 'Editor')),
        "is_accepted" boolean not null default false,
        "created_at" timestamptz not null
      )`);
    this.addSql(
      `create unique index "permission_project_user_unique" on "permission" ("project_id", "user_id")`,
    );
    this.addSql(
      `create unique index "permission_one_owner" on "permission" ("project_id") where "role" = 'Owner'`,
    );
    this.addSql(`create index "permission_user_idx" on "permission" ("user_id", "is_accepted")`);

    this.addSql(`
      create table "rating" (
        "id" serial primary key,
        "project_id" integer not null references "project" ("id") on delete cascade,
        "user_id" integer not null,
        "value" double precision not null check ("value" >= 0 and "value" <= 5),
        "created_at" timestamptz not null,
        "updated_at" timestamptz not null
      )`);
    this.addSql(`create unique index "rating_project_user_unique" on "rating" ("project_id", "user_id")`);
    this.addSql(`create index "rating_user_idx" on "rating" ("user_id")`);

    this.addSql(`CREATE TABLE IF NOT EXISTS projects.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON projects.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON projects.outbox (published_at) WHERE published_at IS NOT NULL;
`);
    this.addSql(`CREATE TABLE IF NOT EXISTS projects.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON projects.processed_message (processed_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "processed_message"`);
    this.addSql(`drop table if exists "outbox"`);
    this.addSql(`drop table if exists "rating"`);
    this.addSql(`drop table if exists "permission"`);
    this.addSql(`drop table if exists "project"`);
  }
}

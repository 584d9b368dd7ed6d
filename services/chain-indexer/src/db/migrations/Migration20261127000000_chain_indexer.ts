import { Migration } from "@mikro-orm/migrations";

export class Migration20261127000000_chain_indexer extends Migration {
  override async up(): Promise<void> {
    // How far the index reaches: the last indexed block and its hash. One row per chain.
    this.addSql(`
      create table "cursor" (
        "chain_id" integer primary key,
        "block_number" bigint not null,
        "block_hash" text null,
        "updated_at" timestamptz not null default now()
      )`);
    // Hashes of recently indexed blocks (the unfinalized window): a reorg's common ancestor is the highest
    // of them the chain still has.
    this.addSql(`
      create table "block" (
        "chain_id" integer not null,
        "number" bigint not null,
        "hash" text not null,
        primary key ("chain_id", "number")
      )`);
    // Every decoded log of a followed event, once.
    this.addSql(`
      create table "log" (
        "chain_id" integer not null,
        "tx_hash" text not null,
        "log_index" integer not null,
        "tx_index" integer not null,
        "block_number" bigint not null,
        "block_hash" text not null,
        "block_timestamp" bigint null,
        "address" text not null,
        "event" text not null,
        "args" jsonb not null,
        -- What the event does not say but its block does (a created auction's token), read at that block.
        "detail" jsonb null,
        primary key ("chain_id", "tx_hash", "log_index")
      )`);
    this.addSql(
      `create index "log_event_position_idx" on "log" ("chain_id", "event", "block_number", "log_index")`,
    );
    this.addSql(`create index "log_block_idx" on "log" ("chain_id", "block_number")`);
    this.addSql(
      `create index "log_user_idx" on "log" ("chain_id", ("args"->>'user'), "block_number", "log_index")
       where "event" in ('UserStatusChanged', 'WhitelistInsert', 'WhitelistRemove')`,
    );
    this.addSql(
      `create index "log_project_hash_idx" on "log" ("chain_id", ("args"->>'projectHash'), "block_number")
       where ("args"->>'projectHash') is not null`,
    );
    this.addSql(
      `create index "log_auction_file_hash_idx" on "log" ("chain_id", ("args"->>'fileHash'))
       where "event" = 'CreateAuctionEvent'`,
    );
    this.addSql(
      `create index "log_auction_idx" on "log" ("chain_id", ("args"->>'auction'))
       where "event" = 'CreateAuctionEvent'`,
    );
    this.addSql(
      `create index "log_auction_address_idx" on "log" ("chain_id", "address", "block_number", "log_index")
       where "event" in ('AuctionStarted', 'AuctionPaused', 'AuctionFinished')`,
    );
    this.addSql(`CREATE TABLE IF NOT EXISTS chain_indexer.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON chain_indexer.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON chain_indexer.outbox (published_at) WHERE published_at IS NOT NULL;
`);
    this.addSql(`CREATE TABLE IF NOT EXISTS chain_indexer.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON chain_indexer.processed_message (processed_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "log", "block", "cursor", "outbox", "processed_message"`);
  }
}

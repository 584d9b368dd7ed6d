import { Migration } from "@mikro-orm/migrations";

/**
 * The chain facts this service applied, so a fact a reorg retracts can be undone: the project's
 * chain-derived fields are recomputed from the facts that still stand. A fact is one log in one block:
 * the same transaction mined again into the new branch (same txHash and logIndex, another block) is a new
 * fact. A retraction that arrives before its fact leaves a tombstone (`retracted`, no project hash yet),
 * and the fact is then recorded but not applied.
 */
export class Migration20261201000000_chain_fact extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "chain_fact" (
        "chain_id" integer not null,
        "tx_hash" varchar(66) not null,
        "log_index" integer not null,
        "block_hash" varchar(66) not null,
        "block_number" bigint not null,
        "kind" varchar(32) not null check ("kind" in ('evaluation', 'auction-created', 'auction-status')),
        "project_hash" char(64) null,
        "value" varchar(16) null,
        "retracted" boolean not null default false,
        "recorded_at" timestamptz not null default now(),
        primary key ("chain_id", "tx_hash", "log_index", "block_hash")
      )`);
    this.addSql(
      `create index "chain_fact_project_idx" on "chain_fact" ("project_hash") where not "retracted"`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "chain_fact"`);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * The two sources of a role (rules.md §7.1): what the chain said last (`chain_role`, and for facts from the
 * indexer their chain position, so an older fact never overrides a newer one) and when an admin last set
 * the role. The newer of the two decides.
 */
export class Migration20261124000100_role_sources extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table "user"
        add column "chain_role" varchar(16) null
          check ("chain_role" in ('Admin', 'Whitelist', 'Viewer', 'Base', 'Blacklist')),
        add column "chain_role_block" bigint null,
        add column "chain_role_log_index" integer null,
        add column "admin_role_at" timestamptz null`);
    // Roles set by an admin before this migration: their latest change is the admin's time.
    this.addSql(`
      update "user" u set "admin_role_at" = c."at"
      from (select "user_id", max("at") as "at" from "role_change" where "changed_by" <> 'chain' group by "user_id") c
      where c."user_id" = u."id"`);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table "user"
        drop column if exists "chain_role",
        drop column if exists "chain_role_block",
        drop column if exists "chain_role_log_index",
        drop column if exists "admin_role_at"`);
  }
}

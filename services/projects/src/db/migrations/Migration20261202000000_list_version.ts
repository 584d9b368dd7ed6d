import { Migration } from "@mikro-orm/migrations";

/**
 * A version of the project table for the hot-read cache: every statement that changes `project` bumps it
 * in its own transaction, so a reader sees the new version exactly when it can see the change (a sequence
 * would move before the commit). Readers compare one integer instead of reading the lists again.
 */
export class Migration20261202000000_list_version extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "list_version" (
        "id" boolean primary key default true check ("id"),
        "version" bigint not null
      )`);
    this.addSql(`insert into "list_version" ("id", "version") values (true, 0)`);
    this.addSql(`
      create function "bump_list_version"() returns trigger language plpgsql
      set search_path from current as $$
      begin
        update "list_version" set "version" = "version" + 1;
        return null;
      end
      $$`);
    this.addSql(`
      create trigger "project_list_version"
      after insert or update or delete or truncate on "project"
      for each statement execute function "bump_list_version"()`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "project_list_version" on "project"`);
    this.addSql(`drop function if exists "bump_list_version"()`);
    this.addSql(`drop table if exists "list_version"`);
  }
}

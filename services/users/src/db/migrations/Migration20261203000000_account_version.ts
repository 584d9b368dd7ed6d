import { Migration } from "@mikro-orm/migrations";

/**
 * - `account_version`: raised by every role change and carried by the session and by each token (`sv`),
 *   so that "issued before this change" is decided by order, not by clocks
 *   (docs/adr/0014-sessions-and-revocation.md). Existing accounts start at 1: tokens of the earlier layout carry none (read as 0).
 * - `owned_project` goes: whether a user owns a project is asked of the projects service, inside the
 *   deletion's transaction, under its lock (`projects.user.fence`), not read from a copy fed by events,
 *   which let a deletion and that user's Add both succeed.
 */
export class Migration20261203000000_account_version extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "user" add column "account_version" bigint not null default 1`);
    this.addSql(`drop table if exists "owned_project"`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "user" drop column "account_version"`);
    this.addSql(`
      create table "owned_project" (
        "project_id" integer primary key,
        "owner_id" integer null,
        "deleted_at" timestamptz null
      )`);
    this.addSql(
      `create index "owned_project_owner_idx" on "owned_project" ("owner_id") where "deleted_at" is null`,
    );
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * The session state behind the Redis hash the gateway reads (rules.md §7.9: revocation survives Redis):
 * the current role and the revocation time of each user who signed in. Redis is rebuilt from here.
 */
export class Migration20261202000000_sessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "auth"."session" (
        "user_id" integer primary key,
        "role" varchar(16) null,
        "revoked_before" bigint null,
        "updated_at" timestamptz not null default now()
      )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "auth"."session"`);
  }
}

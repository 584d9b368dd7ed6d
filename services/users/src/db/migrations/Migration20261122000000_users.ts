import { Migration } from "@mikro-orm/migrations";

export class Migration20261122000000_users extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "user" (
        "id" serial primary key,
        "name" varchar(100) not null,
        "surname" varchar(100) not null,
        "address" varchar(42) not null,
        "mail_address" varchar(254) null,
        "username" varchar(32) not null,
        "role" varchar(16) not null default 'Base'
          check ("role" in ('Admin', 'Whitelist', 'Viewer', 'Base', 'Blacklist')),
        "is_verified" boolean not null default false,
        "created_at" timestamptz not null,
        "updated_at" timestamptz not null
      )`);
    this.addSql(`create unique index "user_address_unique" on "user" (lower("address"))`);
    this.addSql(`create unique index "user_username_unique" on "user" (lower("username"))`);
    this.addSql(`create unique index "user_mail_address_unique" on "user" (lower("mail_address"))`);
    // learnusercount counts verified users on every home-page load.
    this.addSql(`create index "user_verified_idx" on "user" ("is_verified") where "is_verified"`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "user"`);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * An admin's decision, kept where it must hold (docs/adr/0013-which-role-wins.md):
 * - `admin_role_block`: the chain's head block as the index knew it when an admin changed the role; a chain
 *   fact in a block up to it was mined before the admin's change, whatever the seconds say.
 * - `address_sanction`: the addresses whose latest role decision is an admin's Blacklist. It outlives the
 *   account, so deleting the account and signing up again with the same wallet does not lift the Blacklist.
 */
export class Migration20261203000100_admin_decisions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "user" add column "admin_role_block" bigint null`);
    this.addSql(`
      create table "address_sanction" (
        "address" varchar(42) primary key check ("address" = lower("address")),
        "admin_role_at" timestamptz not null,
        "admin_role_block" bigint null,
        "changed_by" varchar(64) not null
      )`);
    this.addSql(`
      insert into "address_sanction" ("address", "admin_role_at", "changed_by")
      select lower(u."address"), u."admin_role_at", last."changed_by"
        from "user" u
        cross join lateral (
          select rc."changed_by" from "role_change" rc where rc."user_id" = u."id" order by rc."id" desc limit 1
        ) last
       where u."role" = 'Blacklist' and u."admin_role_at" is not null and last."changed_by" <> 'chain'`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "address_sanction"`);
    this.addSql(`alter table "user" drop column "admin_role_block"`);
  }
}

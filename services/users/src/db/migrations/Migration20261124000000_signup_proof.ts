import { Migration } from "@mikro-orm/migrations";

/**
 * How a sign-up proved the wallet's consent (rules.md §7.2 "A sign-up cannot be replayed"):
 * `legacy` = the constant `REGISTER` text, whose signature anyone who saw it can replay; `nonce` = a message
 * with a fresh GetNonce nonce (SIWE or `REGISTER: <nonce>`). A nonce-proven sign-up replaces a pending
 * legacy one of the same address; a pending nonce-proven one is never replaced while it is pending.
 * Rows from before this column are `legacy` (the weaker proof: a fresh nonce may replace them).
 */
export class Migration20261124000000_signup_proof extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "user" add column "proof" varchar(8) not null default 'legacy'
         constraint "user_proof_check" check ("proof" in ('legacy', 'nonce'))`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "user" drop column if exists "proof"`);
  }
}

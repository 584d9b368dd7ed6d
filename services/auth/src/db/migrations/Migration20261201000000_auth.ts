import { outboxDdl, processedMessageDdl } from "@fundraise/outbox";
import { Migration } from "@mikro-orm/migrations";

export class Migration20261201000000_auth extends Migration {
  override async up(): Promise<void> {
    // Token signing keys (ES256). The private JWK is kept only while the key signs (see keys/key-store.ts).
    this.addSql(`
      create table "auth"."signing_key" (
        "kid" varchar(64) primary key,
        "algorithm" varchar(16) not null,
        "public_jwk" jsonb not null,
        "private_jwk" jsonb null,
        "created_at" timestamptz not null,
        "retired_at" timestamptz null
      )`);
    this.addSql(`create index "signing_key_created_at_idx" on "auth"."signing_key" ("created_at" desc)`);
    // E-mail verification: only the SHA-256 of a token is stored, never the token.
    this.addSql(`
      create table "auth"."email_verification" (
        "id" serial primary key,
        "user_id" integer not null,
        "mail_address" varchar(254) not null,
        "token_hash" char(64) not null,
        "created_at" timestamptz not null,
        "expires_at" timestamptz not null,
        "used_at" timestamptz null
      )`);
    this.addSql(
      `create unique index "email_verification_token_hash_unique" on "auth"."email_verification" ("token_hash")`,
    );
    this.addSql(`create index "email_verification_user_idx" on "auth"."email_verification" ("user_id")`);
    // Events owed by a state change (auth.user.registered/verified) and handled-message claims.
    this.addSql(outboxDdl("auth"));
    this.addSql(processedMessageDdl("auth"));
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "auth"."processed_message"`);
    this.addSql(`drop table if exists "auth"."outbox"`);
    this.addSql(`drop table if exists "auth"."email_verification"`);
    this.addSql(`drop table if exists "auth"."signing_key"`);
  }
}

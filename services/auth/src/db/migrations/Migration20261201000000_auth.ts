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
    this.addSql(`CREATE TABLE IF NOT EXISTS auth.outbox (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  event_name text NOT NULL,
  payload bytea NOT NULL,
  content_type text NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz NULL
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON auth.outbox (seq) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_at_idx ON auth.outbox (published_at) WHERE published_at IS NOT NULL;
`);
    this.addSql(`CREATE TABLE IF NOT EXISTS auth.processed_message (
  consumer text NOT NULL,
  message_key text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_key)
);
CREATE INDEX IF NOT EXISTS processed_message_processed_at_idx ON auth.processed_message (processed_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "auth"."processed_message"`);
    this.addSql(`drop table if exists "auth"."outbox"`);
    this.addSql(`drop table if exists "auth"."email_verification"`);
    this.addSql(`drop table if exists "auth"."signing_key"`);
  }
}

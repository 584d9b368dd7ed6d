import { Migration } from "@mikro-orm/migrations";

/**
 * Sessions ordered by the account version instead of a revocation time
 * (docs/adr/0014-sessions-and-revocation.md): `version` (the account version the state reflects), `revoked_below` (tokens issued at an older
 * version are refused) and `deleted`. A user revoked under the time-based layout gets `revoked_below = 1`:
 * tokens issued before this layout carry no version (read as 0) and are refused, so they sign in once more;
 * the users service numbers existing accounts from 1, so their new tokens pass.
 */
export class Migration20261203000000_session_versions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table "auth"."session"
        add column "version" bigint not null default 0,
        add column "revoked_below" bigint not null default 0,
        add column "deleted" boolean not null default false`);
    this.addSql(`update "auth"."session" set "revoked_below" = 1 where "revoked_before" is not null`);
    this.addSql(`alter table "auth"."session" drop column "revoked_before"`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "auth"."session" add column "revoked_before" bigint null`);
    this.addSql(`
      alter table "auth"."session"
        drop column "version", drop column "revoked_below", drop column "deleted"`);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * `users.user.account-changed` for every change of a user's sign-in fields (rules.md §2.13 claims, the
 * role, the chain role, verification) and every deletion, written to the outbox by a row trigger in the
 * changing transaction: no code path, not even SQL by hand, can change an account without saying so. The
 * auth service keeps a copy of the accounts it signs in and drops an entry on this event
 * (docs/adr/0012-the-account-copy.md). The payload is JSON, as the bus's `encodeBody` writes it.
 */
export class Migration20261125000000_account_changed extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create or replace function users.account_changed() returns trigger language plpgsql as $$
      declare
        changed users."user";
      begin
        if tg_op = 'DELETE' then changed := old; else changed := new; end if;
        insert into users.outbox (id, event_name, payload, content_type)
        values (
          gen_random_uuid(),
          'users.user.account-changed',
          convert_to(json_build_object('userId', changed.id, 'address', changed.address)::text, 'UTF8'),
          'application/json'
        );
        perform pg_notify('bus_outbox_users', '');
        return null;
      end $$`);
    this.addSql(`
      create trigger "user_account_changed" after update on "user" for each row
      when (
        (old."address", old."username", old."name", old."surname", old."mail_address", old."role",
         old."chain_role", old."is_verified")
        is distinct from
        (new."address", new."username", new."name", new."surname", new."mail_address", new."role",
         new."chain_role", new."is_verified")
      )
      execute function users.account_changed()`);
    this.addSql(`
      create trigger "user_account_deleted" after delete on "user" for each row
      execute function users.account_changed()`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "user_account_changed" on "user"`);
    this.addSql(`drop trigger if exists "user_account_deleted" on "user"`);
    this.addSql(`drop function if exists users.account_changed()`);
  }
}

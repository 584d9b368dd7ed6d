import { Migration } from "@mikro-orm/migrations";

/**
 * When the content was last uploaded: the pinning itself, or the same bytes again (which find the live row).
 * The orphan reconciliation counts a pin's age from here, so content an Add has just uploaded again is never
 * taken for an orphan of an older, failed Add.
 */
export class Migration20261210000000_pin_last_upload extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "pin" add column "last_uploaded_at" timestamptz null`);
    this.addSql(`update "pin" set "last_uploaded_at" = "pinned_at"`);
    this.addSql(`alter table "pin" alter column "last_uploaded_at" set not null`);
    this.addSql(`alter table "pin" alter column "last_uploaded_at" set default now()`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "pin" drop column if exists "last_uploaded_at"`);
  }
}

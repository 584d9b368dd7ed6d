import { Migration } from "@mikro-orm/migrations";

/**
 * The sizes of recorded content may be unknown: the inventory records what the projects service's events
 * say (`projects.content.taken`, whose `fileBytes` may be null), and content found pinned on the node that a
 * project holds is recorded without its sizes (ADR 0023).
 */
export class Migration20261228000000_pin_sizes_nullable extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "pin" alter column "file_bytes" drop not null`);
  }

  override async down(): Promise<void> {
    this.addSql(`update "pin" set "file_bytes" = 0 where "file_bytes" is null`);
    this.addSql(`alter table "pin" alter column "file_bytes" set not null`);
  }
}

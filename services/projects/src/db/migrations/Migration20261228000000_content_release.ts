import { Migration } from "@mikro-orm/migrations";

/**
 * Releases of content (protocol's content-release.ts, ADR 0027): before anything unpins content it asks
 * here, and under the content's lock a release is recorded unless a project holds it. A write that takes
 * content released not long ago waits until the release is over (`confirmed_at`, or its window passed) and
 * the gateway pinned the content again. Rows older than the release memory (an hour) are deleted as new
 * releases are recorded.
 */
export class Migration20261228000000_content_release extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "content_release" (
        "version" bigserial primary key,
        "file_hash" varchar(64) not null,
        "reason" varchar(200) not null,
        "released_at" timestamptz not null default now(),
        "confirmed_at" timestamptz null
      )`);
    this.addSql(
      `create index "content_release_file_hash_idx" on "content_release" ("file_hash", "released_at")`,
    );
    this.addSql(`create index "content_release_released_at_idx" on "content_release" ("released_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "content_release"`);
  }
}

import { Migration } from "@mikro-orm/migrations";

/**
 * Users a deletion fenced (docs/adr/0015-no-orphaned-projects.md): the users service fences a user here
 * inside the transaction that deletes them, before it commits; every write of this service checks the
 * fences of the users it writes for under a shared per-user lock, in its own transaction, so a deletion and
 * that user's Add, invitation, reply or rating are ordered and one of them loses. `deleted_at`: the
 * deletion's event arrived and the user's rows are gone; a fence without it past its grace period is
 * checked against the users service (lifted when the user still exists). The review queue per proposer is
 * counted on every Add.
 */
export class Migration20261203000000_user_fence extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "user_fence" (
        "user_id" integer primary key,
        "fenced_at" timestamptz not null default now(),
        "deleted_at" timestamptz null
      )`);
    this.addSql(
      `create index "user_fence_pending_idx" on "user_fence" ("fenced_at") where "deleted_at" is null`,
    );
    this.addSql(
      `create index "project_review_queue_proposer_idx" on "project" ("proposer_address") where "status" = 'Pending' and not "viewer_accepted"`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "project_review_queue_proposer_idx"`);
    this.addSql(`drop table if exists "user_fence"`);
  }
}

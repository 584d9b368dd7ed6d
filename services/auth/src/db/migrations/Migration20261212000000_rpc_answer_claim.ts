import { Migration } from "@mikro-orm/migrations";

/** A keyed write's run holds its key until it answers: a copy that arrives meanwhile is 409 (ADR 0029). */
export class Migration20261212000000_rpc_answer_claim extends Migration {
  override async up(): Promise<void> {
    this.addSql(`ALTER TABLE auth.rpc_answer ALTER COLUMN envelope DROP NOT NULL;
ALTER TABLE auth.rpc_answer ADD COLUMN IF NOT EXISTS claimed_until timestamptz;
`);
  }

  override async down(): Promise<void> {
    this.addSql(`DELETE FROM auth.rpc_answer WHERE envelope IS NULL;
ALTER TABLE auth.rpc_answer DROP COLUMN IF EXISTS claimed_until;
ALTER TABLE auth.rpc_answer ALTER COLUMN envelope SET NOT NULL;
`);
  }
}

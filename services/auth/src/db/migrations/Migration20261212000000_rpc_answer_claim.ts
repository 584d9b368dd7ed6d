import { rpcAnswerClaimDdl } from "@fundraise/outbox";
import { Migration } from "@mikro-orm/migrations";
import { AUTH_SCHEMA as SCHEMA } from "../schema.ts";

/** A keyed write's run holds its key until it answers: a copy that arrives meanwhile is 409 (ADR 0029). */
export class Migration20261212000000_rpc_answer_claim extends Migration {
  override async up(): Promise<void> {
    this.addSql(rpcAnswerClaimDdl(SCHEMA));
  }

  override async down(): Promise<void> {
    this.addSql(`delete from ${SCHEMA}.rpc_answer where envelope is null`);
    this.addSql(`alter table ${SCHEMA}.rpc_answer drop column if exists claimed_until`);
    this.addSql(`alter table ${SCHEMA}.rpc_answer alter column envelope set not null`);
  }
}

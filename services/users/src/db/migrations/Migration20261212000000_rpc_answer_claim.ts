import { rpcAnswerClaimDdl, rpcAnswerClaimUndoDdl } from "@fundraise/outbox";
import { Migration } from "@mikro-orm/migrations";
import { USERS_SCHEMA as SCHEMA } from "../../users/user.repository.ts";

/** A keyed write's run holds its key until it answers: a copy that arrives meanwhile is 409 (ADR 0029). */
export class Migration20261212000000_rpc_answer_claim extends Migration {
  override async up(): Promise<void> {
    this.addSql(rpcAnswerClaimDdl(SCHEMA));
  }

  override async down(): Promise<void> {
    this.addSql(rpcAnswerClaimUndoDdl(SCHEMA));
  }
}

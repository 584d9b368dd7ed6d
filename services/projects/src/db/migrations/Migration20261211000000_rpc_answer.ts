import { rpcAnswerDdl } from "@fundraise/outbox";
import { Migration } from "@mikro-orm/migrations";
import { PROJECTS_SCHEMA as SCHEMA } from "../../projects/project.tx.ts";

/**
 * The answers to the gateway's keyed writes (Idempotency-Key), kept 24 h: a retry after a lost reply gets
 * the first answer again (docs/adr/0029-idempotency-keys.md).
 */
export class Migration20261211000000_rpc_answer extends Migration {
  override async up(): Promise<void> {
    this.addSql(rpcAnswerDdl(SCHEMA));
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists ${SCHEMA}.rpc_answer`);
  }
}

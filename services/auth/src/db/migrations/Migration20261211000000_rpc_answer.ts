import { Migration } from "@mikro-orm/migrations";

/**
 * The answers to the gateway's keyed writes (Idempotency-Key), kept 24 h: a retry after a lost reply gets
 * the first answer again (docs/adr/0029-idempotency-keys.md).
 */
export class Migration20261211000000_rpc_answer extends Migration {
  override async up(): Promise<void> {
    this.addSql(`CREATE TABLE IF NOT EXISTS auth.rpc_answer (
  key text PRIMARY KEY,
  fingerprint text NOT NULL,
  envelope json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rpc_answer_created_at_idx ON auth.rpc_answer (created_at);
`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists auth.rpc_answer`);
  }
}

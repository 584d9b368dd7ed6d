import { Migration20261122000000_users } from "./Migration20261122000000_users.ts";
import { Migration20261123000000_accounts } from "./Migration20261123000000_accounts.ts";
import { Migration20261124000000_signup_proof } from "./Migration20261124000000_signup_proof.ts";
import { Migration20261124000100_role_sources } from "./Migration20261124000100_role_sources.ts";
import { Migration20261125000000_account_changed } from "./Migration20261125000000_account_changed.ts";
import { Migration20261203000000_account_version } from "./Migration20261203000000_account_version.ts";
import { Migration20261203000100_admin_decisions } from "./Migration20261203000100_admin_decisions.ts";
import { Migration20261204000000_outbox_trace } from "./Migration20261204000000_outbox_trace.ts";
import { Migration20261211000000_rpc_answer } from "./Migration20261211000000_rpc_answer.ts";
import { Migration20261212000000_rpc_answer_claim } from "./Migration20261212000000_rpc_answer_claim.ts";
import { Migration20261227000000_outbox_context } from "./Migration20261227000000_outbox_context.ts";

/** Every migration of the users schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261122000000_users", class: Migration20261122000000_users },
  { name: "Migration20261123000000_accounts", class: Migration20261123000000_accounts },
  { name: "Migration20261124000000_signup_proof", class: Migration20261124000000_signup_proof },
  { name: "Migration20261124000100_role_sources", class: Migration20261124000100_role_sources },
  { name: "Migration20261125000000_account_changed", class: Migration20261125000000_account_changed },
  { name: "Migration20261203000000_account_version", class: Migration20261203000000_account_version },
  { name: "Migration20261203000100_admin_decisions", class: Migration20261203000100_admin_decisions },
  { name: "Migration20261204000000_outbox_trace", class: Migration20261204000000_outbox_trace },
  { name: "Migration20261211000000_rpc_answer", class: Migration20261211000000_rpc_answer },
  { name: "Migration20261212000000_rpc_answer_claim", class: Migration20261212000000_rpc_answer_claim },
  { name: "Migration20261227000000_outbox_context", class: Migration20261227000000_outbox_context },
];

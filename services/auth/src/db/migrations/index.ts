import { Migration20261201000000_auth } from "./Migration20261201000000_auth.ts";
import { Migration20261202000000_sessions } from "./Migration20261202000000_sessions.ts";
import { Migration20261203000000_session_versions } from "./Migration20261203000000_session_versions.ts";
import { Migration20261211000000_rpc_answer } from "./Migration20261211000000_rpc_answer.ts";
import { Migration20261212000000_rpc_answer_claim } from "./Migration20261212000000_rpc_answer_claim.ts";

/** Every migration of the auth schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261201000000_auth", class: Migration20261201000000_auth },
  { name: "Migration20261202000000_sessions", class: Migration20261202000000_sessions },
  { name: "Migration20261203000000_session_versions", class: Migration20261203000000_session_versions },
  { name: "Migration20261211000000_rpc_answer", class: Migration20261211000000_rpc_answer },
  { name: "Migration20261212000000_rpc_answer_claim", class: Migration20261212000000_rpc_answer_claim },
];

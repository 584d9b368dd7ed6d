import { Migration20261126000000_projects } from "./Migration20261126000000_projects.ts";
import { Migration20261201000000_chain_fact } from "./Migration20261201000000_chain_fact.ts";
import { Migration20261202000000_list_version } from "./Migration20261202000000_list_version.ts";
import { Migration20261203000000_user_fence } from "./Migration20261203000000_user_fence.ts";
import { Migration20261211000000_rpc_answer } from "./Migration20261211000000_rpc_answer.ts";
import { Migration20261212000000_rpc_answer_claim } from "./Migration20261212000000_rpc_answer_claim.ts";
import { Migration20261228000000_content_release } from "./Migration20261228000000_content_release.ts";

/** Every migration of the projects schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261126000000_projects", class: Migration20261126000000_projects },
  { name: "Migration20261201000000_chain_fact", class: Migration20261201000000_chain_fact },
  { name: "Migration20261202000000_list_version", class: Migration20261202000000_list_version },
  { name: "Migration20261203000000_user_fence", class: Migration20261203000000_user_fence },
  { name: "Migration20261211000000_rpc_answer", class: Migration20261211000000_rpc_answer },
  { name: "Migration20261212000000_rpc_answer_claim", class: Migration20261212000000_rpc_answer_claim },
  { name: "Migration20261228000000_content_release", class: Migration20261228000000_content_release },
];

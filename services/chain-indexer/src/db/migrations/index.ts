import { Migration20261127000000_chain_indexer } from "./Migration20261127000000_chain_indexer.ts";

/** Every migration of the chain_indexer schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261127000000_chain_indexer", class: Migration20261127000000_chain_indexer },
];

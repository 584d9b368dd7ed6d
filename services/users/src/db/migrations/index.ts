import { Migration20261122000000_users } from "./Migration20261122000000_users.ts";

/** Every migration of the users schema, oldest first; applied at start-up. */
export const migrations = [{ name: "Migration20261122000000_users", class: Migration20261122000000_users }];

import { Migration20261201000000_auth } from "./Migration20261201000000_auth.ts";

/** Every migration of the auth schema, oldest first; applied at start-up. */
export const migrations = [{ name: "Migration20261201000000_auth", class: Migration20261201000000_auth }];

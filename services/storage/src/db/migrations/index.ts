import { Migration20261125000000_storage } from "./Migration20261125000000_storage.ts";
import { Migration20261210000000_pin_last_upload } from "./Migration20261210000000_pin_last_upload.ts";
import { Migration20261228000000_pin_sizes_nullable } from "./Migration20261228000000_pin_sizes_nullable.ts";

/** Every migration of the storage schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261125000000_storage", class: Migration20261125000000_storage },
  { name: "Migration20261210000000_pin_last_upload", class: Migration20261210000000_pin_last_upload },
  { name: "Migration20261228000000_pin_sizes_nullable", class: Migration20261228000000_pin_sizes_nullable },
];

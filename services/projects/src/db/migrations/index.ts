import { Migration20261126000000_projects } from "./Migration20261126000000_projects.ts";

/** Every migration of the projects schema, oldest first; applied at start-up. Never edit a committed one. */
export const migrations = [
  { name: "Migration20261126000000_projects", class: Migration20261126000000_projects },
];

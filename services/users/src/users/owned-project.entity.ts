import { defineEntity, p } from "@mikro-orm/core";

/**
 * Who owns which project, as the projects service announced it (created/deleted events). A deleted project
 * stays as a tombstone (`deletedAt`), so a created event delivered late cannot resurrect it.
 */
export const OwnedProject = defineEntity({
  name: "OwnedProject",
  tableName: "owned_project",
  properties: {
    projectId: p.integer().primary().autoincrement(false),
    ownerId: p.integer().nullable(),
    deletedAt: p.datetime().nullable(),
  },
});
export type OwnedProject = InstanceType<typeof OwnedProject.class>;

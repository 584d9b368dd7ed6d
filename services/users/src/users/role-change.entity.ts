import { defineEntity, p } from "@mikro-orm/core";

/** One change of a user's role: who made it (an admin's user id, or 'chain') and, from chain facts, the tx. */
export const RoleChange = defineEntity({
  name: "RoleChange",
  tableName: "role_change",
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    previousRole: p.string().length(16),
    newRole: p.string().length(16),
    changedBy: p.text(),
    sourceTx: p.string().length(66).nullable(),
    at: p.datetime().onCreate(() => new Date()),
  },
});
export type RoleChange = InstanceType<typeof RoleChange.class>;

import { defineEntity, p } from "@mikro-orm/core";

/** How far the index reaches on a chain: the last indexed block and its hash (written by the indexer). */
export const Cursor = defineEntity({
  name: "Cursor",
  tableName: "cursor",
  properties: {
    chainId: p.integer().primary().autoincrement(false),
    blockNumber: p.bigint("number"),
    blockHash: p.string().nullable(),
    updatedAt: p.datetime(),
  },
});
export type Cursor = InstanceType<typeof Cursor.class>;

import { defineEntity, p } from "@mikro-orm/core";

/**
 * A proposed project. Its content (whitepaper and optional image, one IPFS directory) is the storage
 * service's; the project keeps the directory's `fileHash` (unique), CID and image path. Name unique
 * case-insensitively (index on lower(name)). Status and the auction flags are chain-derived: the chain
 * position of the fact that set them is kept, so older or repeated facts change nothing.
 */
export const Project = defineEntity({
  name: "Project",
  tableName: "project",
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(200),
    description: p.text().nullable(),
    markdown: p.text().default(""),
    fileHash: p.string().length(64),
    cid: p.text(),
    imagePath: p.text().nullable(),
    status: p.string().length(16).default("Pending"),
    viewerAccepted: p.boolean().default(false),
    viewerAcceptedAddress: p.string().length(42).nullable(),
    /** Mean of the project's ratings; 0 without any. */
    rating: p.double().default(0),
    proposerAddress: p.string().length(42),
    isAuctionCreated: p.boolean().default(false),
    isAuctionStarted: p.boolean().default(false),
    auctionStatus: p.string().length(16).nullable(),
    /** Chain position of the evaluation that set `status` (the first one wins). */
    evaluationBlock: p.bigint("number").nullable(),
    evaluationLogIndex: p.integer().nullable(),
    /** Chain position of the last auction fact applied. */
    auctionBlock: p.bigint("number").nullable(),
    auctionLogIndex: p.integer().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Project = InstanceType<typeof Project.class>;

/**
 * A user's place on a project: the Owner (exactly one, accepted at creation), Co-Owners and Editors, each
 * an invitation until accepted. One row per (project, user). Users are the users service's: only the id
 * is kept here, usernames are looked up when needed (they can change).
 */
export const Permission = defineEntity({
  name: "Permission",
  tableName: "permission",
  properties: {
    id: p.integer().primary().autoincrement(),
    projectId: p.integer(),
    userId: p.integer(),
    role: p.string().length(16),
    isAccepted: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Permission = InstanceType<typeof Permission.class>;

/** One user's rating of one project (unique per pair; a new one replaces it). */
export const Rating = defineEntity({
  name: "Rating",
  tableName: "rating",
  properties: {
    id: p.integer().primary().autoincrement(),
    projectId: p.integer(),
    userId: p.integer(),
    value: p.double(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Rating = InstanceType<typeof Rating.class>;

import type { RequestContext } from "@fundraise/bus";
import type { SessionChange, UserRole } from "@fundraise/protocol";
import type { Invitation } from "./user.mapper.ts";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

/** Asks the projects service for a user's pending invitations; throws when it is unavailable or slow. */
export type PendingInvitations = (userId: number, ctx: OpContext) => Promise<Invitation[]>;

/**
 * The projects service, as a deletion needs it: inside the deletion's transaction, before it commits, the
 * user is fenced there (`projects.user.fence`, refused with 409 while they own a project), so no write of
 * theirs can add a project, membership, invitation or rating afterwards; a deletion that does not commit
 * lifts the fence again (`unfence`); one that commits removes the user's rows there before it answers
 * (`removeRows`; its event does the same later).
 */
export interface ProjectFence {
  fence(userId: number, ctx: OpContext): Promise<void>;
  unfence(userId: number, ctx: OpContext): Promise<void>;
  removeRows(userId: number, ctx: OpContext): Promise<void>;
}

/** The auth service's session (`auth.session.apply`): holds the change when this resolves. */
export type ApplySession = (change: SessionChange, ctx: OpContext) => Promise<void>;

/** The chain index (the chain-indexer's RPC), as role changes need it. */
export interface ChainIndex {
  /** The chain role the index holds now (`chain.address.role`). */
  role(address: string, ctx: OpContext): Promise<UserRole>;
  /** The chain node's head block now (through the indexer); null when the node did not say (then times decide). */
  head(ctx: OpContext): Promise<number | null>;
}

import type { RequestContext } from "@fundraise/bus";
import type { ContentRef, ResponseOf, Uploaded, UsersRpc } from "@fundraise/protocol";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

export type { Uploaded };
export type UserDtoOut = ResponseOf<typeof UsersRpc.byIds>[number];

/** Content with its whitepaper: what a write stores. */
export type StoredContent = ContentRef & { fileBytes: number };

/** The storage service, as the rules need it (app.ts wires it to StorageRpc). */
export interface ContentStore {
  /**
   * Pins content the gateway added to IPFS for this write and records it, with `reason` for the
   * inventory.
   */
  store(content: StoredContent, reason: string, ctx: OpContext): Promise<Uploaded>;
  /** Unpins; true when it was pinned. Not bound by the caller's deadline: clean-up runs after it too. */
  remove(fileHash: string, reason: string, ctx: OpContext): Promise<boolean>;
}

/** The users service, as memberships need it (app.ts wires it to UsersRpc). */
export interface UserDirectory {
  byUsername(username: string, ctx: OpContext): Promise<UserDtoOut | null>;
  byIds(ids: number[], ctx: OpContext): Promise<UserDtoOut[]>;
}

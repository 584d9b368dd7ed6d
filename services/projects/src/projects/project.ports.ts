import type { RequestContext } from "@fundraise/bus";
import type { ContentStream, ResponseOf, Uploaded, UsersRpc } from "@fundraise/protocol";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

export type { Uploaded };
export type UserDtoOut = ResponseOf<typeof UsersRpc.byIds>[number];

/** The storage service, as the rules need it (app.ts wires it to StorageUpload and StorageRpc). */
export interface ContentStore {
  /**
   * Finishes content streamed to the storage service for this write (the gateway sent its parts while
   * the body arrived): on IPFS, pinned and recorded, with `reason` for the inventory.
   */
  store(content: ContentStream, reason: string, ctx: OpContext): Promise<Uploaded>;
  /** Unpins; true when it was pinned. Not bound by the caller's deadline: clean-up runs after it too. */
  remove(fileHash: string, reason: string, ctx: OpContext): Promise<boolean>;
  /** The whitepaper's bytes. */
  read(fileHash: string, ctx: OpContext): Promise<Uint8Array>;
}

/** The users service, as memberships need it (app.ts wires it to UsersRpc). */
export interface UserDirectory {
  byUsername(username: string, ctx: OpContext): Promise<UserDtoOut | null>;
  byIds(ids: number[], ctx: OpContext): Promise<UserDtoOut[]>;
}

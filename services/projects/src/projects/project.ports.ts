import type { RequestContext } from "@fundraise/bus";
import type { ResponseOf, StorageRpc, UsersRpc } from "@fundraise/protocol";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

export type Uploaded = ResponseOf<typeof StorageRpc.upload>;
export type UserDtoOut = ResponseOf<typeof UsersRpc.byIds>[number];

/** The storage service, as the rules need it (app.ts wires it to StorageRpc). */
export interface ContentStore {
  upload(
    input: { file: Uint8Array; image: Uint8Array | null; reason: string },
    ctx: OpContext,
  ): Promise<Uploaded>;
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

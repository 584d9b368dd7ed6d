import type { RequestContext } from "@fundraise/bus";
import type { ResponseOf, UsersRpc } from "@fundraise/protocol";

/** What a use case knows about the message that asked for it (a handler's `ctx`). */
export type OpContext = RequestContext;

export type UserDtoOut = ResponseOf<typeof UsersRpc.byIds>[number];

/** The users service, as memberships need it (app.ts wires it to UsersRpc). */
export interface UserDirectory {
  byUsername(username: string, ctx: OpContext): Promise<UserDtoOut | null>;
  byIds(ids: number[], ctx: OpContext): Promise<UserDtoOut[]>;
}

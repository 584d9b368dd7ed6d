/**
 * The messages of the gateway's live-update stream (`GET /events`), by type (the SSE `event:` field).
 *
 * Written here from the stream's wire contract because the OpenAPI document does not describe them yet.
 * Once the gateway's document carries one schema per message type, take these types from
 * `generated/schema.ts` instead and delete the hand-written ones. The records they carry (ProjectDTO,
 * an invitation, a role) are already taken from the document.
 */
import type { paths } from "./generated/schema.ts";

type JsonAnswer<Route, Status extends number> = Route extends {
  responses: { [S in Status]: { content: { "application/json": infer A } } };
}
  ? A
  : never;
type DataOf<A> = A extends { data: infer D } ? NonNullable<D> : never;

/** A project as `GET /Project/Get/{id}` answers it (`data` of the envelope). */
export type ProjectDTO = DataOf<JsonAnswer<paths["/Project/Get/{id}"]["get"], 200>>;

/** A user as `GET /user/get` answers it. */
export type UserDTO = DataOf<JsonAnswer<paths["/user/get"]["get"], 200>>;

/** A platform role (`Admin`, `Whitelist`, `Viewer`, `Base`, `Blacklist`), null for none. */
export type UserRole = UserDTO["role"];

/** An invitation to a project, as in a UserDTO's `invitations`. */
export type Invitation = NonNullable<UserDTO["invitations"]>[number];

/** What happened to a project; `deleted` carries only its id. */
export type ProjectChange =
  | "created"
  | "updated"
  | "viewer-accepted"
  | "status"
  | "rated"
  | "auction"
  | "deleted";

/** `event: project`. `indexedBlock`: the chain block the change reflects, when it came from the chain. */
export type ProjectMessage =
  | { change: Exclude<ProjectChange, "deleted">; project: ProjectDTO; indexedBlock?: number }
  | { change: "deleted"; project: { projectID: number }; indexedBlock?: number };

/** `event: invitation`: an invitation to or from the caller was made, withdrawn or accepted. */
export interface InvitationMessage {
  change: "created" | "withdrawn" | "accepted";
  invitation: Invitation;
}

/** `event: role`: the caller's role changed; sign in again for a token with the new one. */
export interface RoleMessage {
  role: UserRole;
  previousRole: UserRole;
}

/** `event: chain` (no `id:`): how far the indexer has read the chain. */
export interface ChainMessage {
  indexedBlock: number;
  headBlock: number;
}

/** `event: reset`: the stream could not resume from the last id; reload state, the stream goes on live. */
export interface ResetMessage {
  reason: string;
}

/** Each message type of the stream and its data. */
export interface StreamMessages {
  project: ProjectMessage;
  invitation: InvitationMessage;
  role: RoleMessage;
  chain: ChainMessage;
  reset: ResetMessage;
}

export type StreamMessageType = keyof StreamMessages;

export const STREAM_MESSAGE_TYPES: readonly StreamMessageType[] = [
  "project",
  "invitation",
  "role",
  "chain",
  "reset",
];

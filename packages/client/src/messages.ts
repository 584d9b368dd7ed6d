/**
 * The messages of the gateway's live-update stream (`GET /events`), by type (the SSE `event:` field),
 * taken from the gateway's OpenAPI document (one schema per message type). `ProjectMessage` narrows the
 * document's union so that `deleted` carries the project's id only.
 */
import type { components, paths } from "./generated/schema.ts";

type Schemas = components["schemas"];
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

/** What happened to a project; `deleted` carries only its id. */
export type ProjectChange = Schemas["ProjectMessage"]["change"];

/** `event: project`. `indexedBlock`: the chain block the change reflects, when it came from the chain. */
export type ProjectMessage =
  | { change: Exclude<ProjectChange, "deleted">; project: ProjectDTO; indexedBlock?: number }
  | { change: "deleted"; project: { projectID: number }; indexedBlock?: number };

/** `event: invitation`: an invitation to the caller was made, withdrawn or accepted. */
export type InvitationMessage = Schemas["InvitationMessage"];
/** An invitation to a project (ProjectPermission). */
export type Invitation = InvitationMessage["invitation"];

/** `event: role`: the caller's role changed; sign in again for a token with the new one. */
export type RoleMessage = Schemas["RoleMessage"];

/** `event: chain` (no `id:`): how far the indexer has read the chain. */
export type ChainMessage = Schemas["ChainMessage"];

/** `event: reset`: the stream could not resume from the last id; reload state, the stream goes on live. */
export type ResetMessage = Schemas["ResetMessage"];

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

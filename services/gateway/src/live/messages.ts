import {
  Id,
  INVITATION_CHANGES,
  Nullable,
  PROJECT_CHANGES,
  ProjectDto,
  ProjectPermission,
  UserRole,
} from "@fundraise/protocol";
import Type from "typebox";

/**
 * The messages of `GET /events`, one schema per `event:` type; `data` is one line of JSON of it. These
 * schemas are the OpenAPI document's, so the typed client (packages/client) takes its types from them.
 */
export const STREAM_CHANGES = PROJECT_CHANGES.filter((c) => c !== "members");

export const ProjectMessage = Type.Object(
  {
    change: Type.Enum(STREAM_CHANGES),
    project: Type.Union([ProjectDto, Type.Object({ projectID: Id })], {
      description: "the project as GET /Project/Get/{id} answers it now; for `deleted`, only its id",
    }),
    indexedBlock: Type.Optional(Type.Integer({ description: "the block a chain-derived change came from" })),
  },
  { $id: "ProjectMessage", description: "event: project — a project the caller may see changed" },
);

export const InvitationMessage = Type.Object(
  { change: Type.Enum(INVITATION_CHANGES), invitation: ProjectPermission },
  { $id: "InvitationMessage", description: "event: invitation — an invitation to the caller" },
);

export const RoleMessage = Type.Object(
  { role: Nullable(UserRole), previousRole: Nullable(UserRole) },
  { $id: "RoleMessage", description: "event: role — the caller's role changed; sign in again" },
);

export const ChainMessage = Type.Object(
  { indexedBlock: Type.Integer(), headBlock: Type.Integer() },
  { $id: "ChainMessage", description: "event: chain — the index advanced (at most once a second; no id)" },
);

export const ResetMessage = Type.Object(
  { reason: Type.String() },
  {
    $id: "ResetMessage",
    description: "event: reset — the resume position is unknown or too old: reload, the stream goes on live",
  },
);

export const STREAM_MESSAGES = [ProjectMessage, InvitationMessage, RoleMessage, ChainMessage, ResetMessage];

/** One message as it is written (framed by @fastify/sse); `data` is already JSON. */
export interface Outbound {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
}

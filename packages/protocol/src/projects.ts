import Type from "typebox";
import {
  AuctionStatus,
  Caller,
  DateTime,
  FileHash,
  Id,
  MaybeCaller,
  Nullable,
  PermissionRole,
  ProjectStatus,
} from "./common.ts";
import {
  ContentDropped,
  ContentRelease,
  ContentTaken,
  ReleaseContentAnswer,
  ReleaseContentRequest,
} from "./content-release.ts";
import { defineEvent, defineRpc } from "./message.ts";
import { personal } from "./personal.ts";
import { ContentRef } from "./storage.ts";

/** A project as returned (ProjectDTO), with the chain-derived flags the platform adds. */
export const ProjectDto = Type.Object(
  {
    projectID: Id,
    projectName: Type.String(),
    date: Nullable(DateTime),
    isAuctionCreated: Type.Boolean(),
    isAuctionStarted: Type.Boolean(),
    auctionStatus: Nullable(AuctionStatus),
    projectDescription: Nullable(Type.String()),
    imageUrl: Nullable(Type.String({ description: "IPFS path of the image" })),
    rating: Type.Number(),
    status: ProjectStatus,
    markDown: Type.String(),
    fileHash: Type.String(),
    proposerAddress: Nullable(Type.String()),
    viewerAccepted: Type.Boolean(),
    viewerAcceptedAddress: Nullable(Type.String()),
    fileHex: Type.Optional(
      Type.String({ description: "the project file as hex, when asked for withHex (the gateway reads it)" }),
    ),
  },
  { $id: "ProjectDTO" },
);

/** Project data sent by a client for Add and Update. */
export const ProjectRequest = Type.Object(
  {
    projectID: Type.Optional(Type.Integer()),
    projectName: Type.String({ minLength: 1, maxLength: 200 }),
    date: Type.Optional(Nullable(Type.String())),
    projectDescription: Type.Optional(Nullable(Type.String({ maxLength: 20_000 }))),
    imageUrl: Type.Optional(Nullable(Type.String({ description: "optional image as hex" }))),
    markDown: Type.Optional(Type.String()),
    fileHex: Type.Optional(Type.String({ description: "hexadecimal content of the project file" })),
  },
  { $id: "ProjectRequest" },
);

export const ProjectTemplateDto = Type.Object(
  { projectID: Id, projectName: Type.String(), abstract: Type.String(), projectDetails: Type.String() },
  { $id: "ProjectTemplateDTO" },
);

export const ProjectPermission = Type.Object(
  {
    id: Id,
    projectID: Id,
    userID: Id,
    role: PermissionRole,
    isAccepted: Type.Boolean(),
  },
  { $id: "ProjectPermission" },
);

export const ProjectPermissionRequest = Type.Object(
  {
    projectID: Id,
    username: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    role: Type.Optional(PermissionRole),
    isAccepted: Type.Optional(Type.Boolean()),
  },
  { $id: "ProjectPermissionRequest" },
);

export const Rating = Type.Object(
  { id: Id, projectID: Id, userID: Id, rate: Type.Number({ minimum: 0, maximum: 5 }) },
  { $id: "Rating" },
);

/**
 * What the projects service receives for Add and Update: the fields of a ProjectRequest, with the file
 * and image decoded from hex by the gateway and added to IPFS, pinned, while the body arrived; the write
 * carries their reference (the storage service records the pin from the write's `content.taken` event).
 */
export const ProjectWrite = Type.Object({
  projectID: Type.Optional(Type.Integer()),
  projectName: Type.String({ minLength: 1, maxLength: 200 }),
  projectDescription: Nullable(Type.String({ maxLength: 20_000 })),
  markDown: Nullable(Type.String()),
  /** The file (and image) added for this write; null when the request sent neither. */
  content: Nullable(ContentRef),
});

/**
 * What changed in a project, for live streams (the gateway's `GET /events`). `members`: a permission row
 * came or went (an invitation, a reply, a removal): it changes who sees the project, not the project.
 */
export const PROJECT_CHANGES = [
  "created",
  "updated",
  "viewer-accepted",
  "status",
  "rated",
  "auction",
  "deleted",
  "members",
] as const;
export const ProjectChange = Type.Enum(PROJECT_CHANGES);
export type ProjectChange = (typeof PROJECT_CHANGES)[number];

/** What decides who sees a project (rules.md §4.2; visibility.ts): its state and its permission rows. */
export const ProjectAudience = Type.Object({
  viewerAccepted: Type.Boolean(),
  status: ProjectStatus,
  /** Users with a permission row on it, accepted or invited. */
  memberIds: Type.Array(Id),
});

/** A project and who belongs to it: what a stream needs to answer each subscriber as a read would. */
export const ProjectView = Type.Object({ project: ProjectDto, memberIds: Type.Array(Id) });

export const INVITATION_CHANGES = ["created", "withdrawn", "accepted"] as const;
export const InvitationChange = Type.Enum(INVITATION_CHANGES);

/**
 * Add's answer: the project, and `existing` when the same proposer's identical Add (name and content)
 * had already created it in the last 10 minutes (rules.md §8.14: its first answer was lost).
 */
export const AddedProject = Type.Object({
  ...ProjectDto.properties,
  existing: Type.Optional(Type.Boolean()),
});

const ProjectList = Type.Array(ProjectDto);
/**
 * A co-owner: the UserDTO the users service answered, passed on unchecked (users.ts imports this module, so
 * this one cannot name UserDto). The fields below accept anything, as before: they only say which of its
 * fields are personal, for the journal.
 */
const CoOwner = Type.Unknown({
  description: "UserDTO",
  properties: {
    name: personal("name", Type.Unknown()),
    surname: personal("name", Type.Unknown()),
    mailAddress: personal("email", Type.Unknown()),
  },
});
const ById = Type.Object({ caller: MaybeCaller, id: Type.Integer() });
const ByIdSigned = Type.Object({ caller: Caller, id: Type.Integer() });
const Done = Type.Null();

export const ProjectsRpc = {
  list: defineRpc("projects.project.list", {
    request: Type.Object({ caller: MaybeCaller }),
    response: ProjectList,
    effect: "read",
  }),
  get: defineRpc("projects.project.get", { request: ById, response: ProjectDto, effect: "read" }),
  add: defineRpc("projects.project.add", {
    request: Type.Object({ caller: Caller, project: ProjectWrite }),
    response: AddedProject,
    timeoutMs: 60_000,
  }),
  update: defineRpc("projects.project.update", {
    request: Type.Object({ caller: Caller, project: ProjectWrite }),
    response: ProjectDto,
    timeoutMs: 60_000,
  }),
  delete: defineRpc("projects.project.delete", { request: ByIdSigned, response: Done }),
  rate: defineRpc("projects.project.rate", {
    request: Type.Object({ caller: Caller, id: Type.Integer(), rating: Type.Number() }),
    response: ProjectDto,
  }),
  byStatus: defineRpc("projects.project.by-status", {
    request: Type.Object({ caller: MaybeCaller, status: ProjectStatus }),
    response: ProjectList,
    effect: "read",
  }),
  syncStatus: defineRpc("projects.project.sync-status", { request: ByIdSigned, response: ProjectDto }),
  updateMarkdown: defineRpc("projects.project.update-markdown", {
    request: Type.Object({ caller: Caller, id: Type.Integer(), markDown: Type.String() }),
    response: ProjectDto,
  }),
  listPermissioned: defineRpc("projects.project.list-permissioned", {
    request: Type.Object({ caller: Caller }),
    response: ProjectList,
    effect: "read",
  }),
  listInvited: defineRpc("projects.project.list-invited", {
    request: Type.Object({ caller: Caller }),
    response: ProjectList,
    effect: "read",
  }),
  /**
   * The version tag of the lists this caller shares with every caller of the same view (anonymous; Admin and
   * Viewer), `<list>@<version>`, moved by every change to a project; null when the caller's lists depend on
   * their own memberships. The gateway answers a list from its copy, or 304, while the tag holds.
   */
  listTag: defineRpc("projects.project.list-tag", {
    request: Type.Object({ caller: MaybeCaller }),
    response: Nullable(Type.String()),
    effect: "read",
  }),
  /** Projects as the event stream sends them, with their members; missing ids are left out. */
  views: defineRpc("projects.project.views", {
    request: Type.Object({ projectIds: Type.Array(Id, { maxItems: 100 }) }),
    response: Type.Array(ProjectView),
    effect: "read",
  }),
  top: defineRpc("projects.project.top", {
    request: Type.Object({ caller: MaybeCaller, count: Type.Integer() }),
    response: ProjectList,
    effect: "read",
  }),
  hashes: defineRpc("projects.project.hashes", {
    request: Type.Object({ caller: Caller, onlyAuctionsStarted: Type.Boolean() }),
    response: Type.Array(Type.String()),
    effect: "read",
  }),
  viewerReply: defineRpc("projects.project.viewer-reply", {
    request: Type.Object({ caller: Caller, id: Type.Integer(), reply: Type.Boolean() }),
    response: Nullable(ProjectDto),
  }),
  viewerQueue: defineRpc("projects.project.viewer-queue", {
    request: Type.Object({ caller: Caller }),
    response: ProjectList,
    effect: "read",
  }),
  syncAuction: defineRpc("projects.project.sync-auction", { request: ByIdSigned, response: ProjectDto }),
  invite: defineRpc("projects.permission.invite", {
    request: Type.Object({ caller: Caller, request: ProjectPermissionRequest }),
    response: Type.String({ description: "id of the new invitation" }),
  }),
  reply: defineRpc("projects.permission.reply", {
    request: Type.Object({ caller: Caller, request: ProjectPermissionRequest }),
    response: Done,
  }),
  coOwners: defineRpc("projects.permission.co-owners", {
    request: Type.Object({ caller: Caller, projectID: Type.Integer() }),
    response: Type.Array(CoOwner),
    effect: "read",
  }),
  removeCollaborator: defineRpc("projects.permission.remove", {
    request: Type.Object({ caller: Caller, request: ProjectPermissionRequest }),
    response: Done,
  }),
  /** Asked by the storage service's reconciliation: which of these contents a project holds. */
  heldContent: defineRpc("projects.content.held", {
    request: Type.Object({ fileHashes: Type.Array(FileHash, { maxItems: 1000 }) }),
    response: Type.Array(FileHash),
    effect: "read",
  }),
  /**
   * Asked by whoever unpins (storage, the gateway for a refused write) before it unpins: held content is
   * answered as such, the rest is released (content-release.ts). Under each content's lock.
   */
  releaseContent: defineRpc("projects.content.release", {
    request: ReleaseContentRequest,
    response: ReleaseContentAnswer,
  }),
  /** The unpins of these releases are done: a write of the same content need not wait for their window. */
  confirmRelease: defineRpc("projects.content.release-done", {
    request: Type.Object({ releases: Type.Array(ContentRelease, { maxItems: 1000 }) }),
    response: Done,
  }),
  pendingInvitations: defineRpc("projects.permission.pending-of-user", {
    request: Type.Object({ userId: Id }),
    response: Type.Array(ProjectPermission),
    effect: "read",
  }),
  /**
   * Asked by the users service inside the transaction that deletes a user, before it commits: refused (409
   * USER_OWNS_PROJECT) while the user is a project's accepted Owner; otherwise the user is fenced, so no
   * write of the projects service adds a project, membership, invitation or rating of them any more.
   */
  fenceUser: defineRpc("projects.user.fence", { request: Type.Object({ userId: Id }), response: Done }),
  /** The deletion that fenced the user did not commit: the fence goes (a user who still exists). */
  unfenceUser: defineRpc("projects.user.unfence", { request: Type.Object({ userId: Id }), response: Done }),
  /**
   * The deletion committed: the user's permissions, invitations and ratings go (ratings recomputed), before
   * the deletion answers. Idempotent; the `users.user.deleted` event does the same later.
   */
  removeUser: defineRpc("projects.user.remove", { request: Type.Object({ userId: Id }), response: Done }),
} as const;

export const ProjectsEvents = {
  created: defineEvent(
    "projects.project.created",
    Type.Object({ projectId: Id, fileHash: FileHash, ownerId: Id, projectName: Type.String() }),
  ),
  deleted: defineEvent("projects.project.deleted", Type.Object({ projectId: Id, fileHash: Type.String() })),
  /** A project took content (Add, a new file by Update), in the same transaction: its pin is recorded. */
  contentTaken: defineEvent("projects.content.taken", ContentTaken),
  /** A project let go of content (deleted, rejected, file replaced): it is released and unpinned. */
  contentDropped: defineEvent("projects.content.dropped", ContentDropped),
  /**
   * Any change to a project or to who belongs to it, in the changing transaction. `before`: who saw it
   * before (null for a new project), so a stream can tell a project leaving a subscriber's view from one
   * it never saw. Chain-derived changes carry the block they came from.
   */
  changed: defineEvent(
    "projects.project.changed",
    Type.Object({
      projectId: Id,
      change: ProjectChange,
      before: Nullable(ProjectAudience),
      indexedBlock: Type.Optional(Type.Integer({ minimum: 0 })),
    }),
  ),
  /** An invitation to `invitation.userID` was created, withdrawn (declined, removed) or accepted. */
  invitationChanged: defineEvent(
    "projects.invitation.changed",
    Type.Object({ change: InvitationChange, invitation: ProjectPermission }),
  ),
} as const;

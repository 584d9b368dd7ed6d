import type {
  AuctionStatus,
  PermissionRole,
  ProjectStatus,
  ProjectsRpc,
  ResponseOf,
} from "@fundraise/protocol";
import type { Permission, Project } from "./project.entity.ts";

export type ProjectDtoOut = ResponseOf<typeof ProjectsRpc.get>;
export type PermissionOut = ResponseOf<typeof ProjectsRpc.pendingInvitations>[number];

/** A project as clients see it (ProjectDTO plus viewerAccepted, isAuctionStarted, auctionStatus). */
export function toProjectDto(project: Project, fileHex?: string): ProjectDtoOut {
  return {
    projectID: project.id,
    projectName: project.name,
    date: project.createdAt.toISOString(),
    isAuctionCreated: project.isAuctionCreated,
    isAuctionStarted: project.isAuctionStarted,
    auctionStatus: (project.auctionStatus ?? null) as AuctionStatus | null,
    projectDescription: project.description ?? null,
    imageUrl: project.imagePath ?? null,
    rating: Number(project.rating),
    status: project.status as ProjectStatus,
    markDown: project.markdown,
    fileHash: project.fileHash,
    proposerAddress: project.proposerAddress,
    viewerAccepted: project.viewerAccepted,
    viewerAcceptedAddress: project.viewerAcceptedAddress ?? null,
    ...(fileHex === undefined ? {} : { fileHex }),
  };
}

/** A permission row as clients see it (ProjectPermission). */
export function toPermission(permission: Permission): PermissionOut {
  return {
    id: permission.id,
    projectID: permission.projectId,
    userID: permission.userId,
    role: permission.role as PermissionRole,
    isAccepted: permission.isAccepted,
  };
}

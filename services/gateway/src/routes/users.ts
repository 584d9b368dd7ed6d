import type { Bus } from "@fundraise/bus";
import { ProjectPermissionRequest, ProjectsRpc, UserDto, UsersRpc, UserUpdate } from "@fundraise/protocol";
import Type from "typebox";
import type { Server } from "../server.ts";
import { registerRpcRoute } from "./define.ts";
import { IdParams, Int32, NoInput } from "./params.ts";

const tag = "User";

/** The User controller (rules.md §3; docs/http-interface.md). */
export function registerUserRoutes(app: Server, bus: Bus): void {
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/user/get",
    tag,
    summary: "The caller's own user, with pending invitations",
    access: "signed-in",
    input: {},
    rpc: UsersRpc.get,
    request: ({ caller }) => ({ caller }),
  });
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/user/update",
    tag,
    summary: "Update the caller's name, surname, username or e-mail",
    access: "signed-in",
    // One object schema, not an intersection: body keys are matched against its properties, and
    // unknown ones (the client sends `address`) are ignored anyway.
    input: { body: UserUpdate },
    rpc: UsersRpc.update,
    request: ({ caller, body }) => ({
      caller,
      user: {
        name: body.name ?? null,
        surname: body.surname ?? null,
        username: body.username ?? null,
        mailAddress: body.mailAddress ?? null,
      },
    }),
  });
  registerRpcRoute(app, bus, {
    method: "DELETE",
    url: "/user/delete",
    tag,
    summary: "Delete the caller's own account",
    access: "signed-in",
    input: {},
    rpc: UsersRpc.deleteSelf,
    request: ({ caller }) => ({ caller }),
  });
  registerRpcRoute(app, bus, {
    method: "DELETE",
    url: "/user/deleteuser/:id",
    tag,
    summary: "Delete a user account (admin)",
    access: ["Admin"],
    input: { params: IdParams },
    rpc: UsersRpc.delete,
    request: ({ caller, params }) => ({ caller, id: params.id }),
  });
  registerRpcRoute(app, bus, {
    method: ["POST", "PUT"],
    url: "/user/invite",
    tag,
    summary: "Invite a user to a project (Owner or Co-Owner)",
    access: "signed-in",
    input: { body: ProjectPermissionRequest },
    rpc: ProjectsRpc.invite,
    answer: { status: 201 },
    request: ({ caller, body }) => ({ caller, request: body }),
  });
  registerRpcRoute(app, bus, {
    method: ["PUT", "POST"],
    url: "/user/invitationreply",
    tag,
    summary: "Accept or decline a project invitation",
    access: "signed-in",
    input: { body: ProjectPermissionRequest },
    rpc: ProjectsRpc.reply,
    request: ({ caller, body }) => ({ caller, request: body }),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/user/getall",
    tag,
    summary: "All users (admin)",
    access: ["Admin"],
    input: {},
    rpc: UsersRpc.list,
    request: ({ caller }) => ({ caller }),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/user/learnusercount",
    tag,
    summary: "Number of verified users",
    access: "anonymous",
    input: { querystring: NoInput },
    rpc: UsersRpc.count,
    request: () => ({}),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/user/getcoowners/:projectID",
    tag,
    summary: "The project's Owner and Co-Owners (members, admin)",
    access: "signed-in",
    input: { params: Type.Object({ projectID: Int32 }) },
    rpc: ProjectsRpc.coOwners,
    answer: { schema: Type.Array(UserDto) },
    request: ({ caller, params }) => ({ caller, projectID: params.projectID }),
  });
  registerRpcRoute(app, bus, {
    method: "DELETE",
    url: "/user/removecollab",
    tag,
    summary: "Remove a collaborator or pending invitation, or leave a project",
    access: "signed-in",
    input: { body: ProjectPermissionRequest },
    rpc: ProjectsRpc.removeCollaborator,
    request: ({ caller, body }) => ({ caller, request: body }),
  });
  registerRpcRoute(app, bus, {
    method: "PATCH",
    url: "/user/updaterole/:address/:role",
    tag,
    summary: "Set a user's role (admin)",
    access: ["Admin"],
    input: {
      params: Type.Object({ address: Type.String({ maxLength: 64 }), role: Type.String({ maxLength: 32 }) }),
    },
    rpc: UsersRpc.updateRole,
    request: ({ caller, params }) => ({ caller, address: params.address, role: params.role }),
  });
}

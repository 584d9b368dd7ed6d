import type { Bus } from "@fundraise/bus";
import { type Caller, PROJECT_STATUSES, ProjectDto, ProjectRequest, ProjectsRpc } from "@fundraise/protocol";
import type { FastifyRequest } from "fastify";
import Type, { type Static } from "typebox";
import type { Server } from "../server.ts";
import { addContentToIpfs, contentOf, takeContentField, type UploadDeps } from "../uploads/plugin.ts";
import { retryReleased } from "../uploads/released.ts";
import { withFileHex } from "../uploads/with-hex.ts";
import { registerRpcRoute } from "./define.ts";
import { IdParams, Int32, NoInput, oneOf, SignedInt32 } from "./params.ts";

const tag = "Project";

/**
 * `imageUrl` in a request is a new image as hex. The web client also sends back the `imageUrl` it read (an
 * IPFS path, `/ipfs/<cid>/image`) when it updates other fields: that means "keep the image", not bad hex.
 */
const isIpfsPath = (value: string) => /^\/ipfs\//i.test(value.trim());

/**
 * Project data in. The file and image were decoded from hex at the edge and added to IPFS, pinned, as the
 * body arrived (uploads/): the write carries their reference; a refused write's content is released again.
 */
async function toProjectWrite(body: Static<typeof ProjectRequest>, request: FastifyRequest) {
  if (body.fileHex) takeContentField(request, "fileHex", body.fileHex);
  if (body.imageUrl && !isIpfsPath(body.imageUrl)) takeContentField(request, "imageUrl", body.imageUrl);
  return {
    ...(body.projectID === undefined ? {} : { projectID: body.projectID }),
    projectName: body.projectName,
    projectDescription: body.projectDescription ?? null,
    markDown: body.markDown ?? null,
    content: await contentOf(request),
  };
}

/** The Project controller (rules.md §4; docs/http-interface.md). */
export function registerProjectRoutes(
  app: Server,
  bus: Bus,
  { uploadBodyLimit, ...uploads }: UploadDeps & { uploadBodyLimit: number },
): void {
  const WithHexQuery = Type.Object({ withHex: Type.Optional(Type.Boolean()) });
  /** The version of a hot list for this caller's view (projects' listTag), null when it is their own. */
  const listTag = async (caller: Caller | null, list: string, request: FastifyRequest) => {
    const tag = await bus.call(ProjectsRpc.listTag, { caller }, { requestId: request.id });
    return tag === null ? null : `${list}|${tag}`;
  };
  /** withHex: each project's file, read from IPFS here. */
  const hexIf = <P extends { fileHash: string; projectID: number }>(
    projects: P[],
    withHex: boolean | undefined,
    request: FastifyRequest,
  ) => (withHex ? withFileHex(projects, { ...uploads, log: request.log }) : projects);
  // The upload routes read their JSON as it arrives, decoding the hex and adding it to IPFS on the way
  // (uploads/plugin.ts), each in a context of its own where that reader replaces the JSON parser.
  const uploadBody = {
    limit: uploadBodyLimit,
    reader: (context: Server) => addContentToIpfs(context, uploads),
  };

  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/Get/All",
    tag,
    summary: "Visible projects; withHex adds the file content as hex",
    access: "anonymous",
    input: { querystring: WithHexQuery },
    rpc: ProjectsRpc.list,
    request: ({ caller }) => ({ caller }),
    answer: { data: (projects, { query, request }) => hexIf(projects, query.withHex, request) },
    cache: {
      version: ({ caller, query, request }) =>
        query.withHex ? Promise.resolve(null) : listTag(caller, "all", request),
    },
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/Get/:id",
    tag,
    summary: "One visible project",
    access: "anonymous",
    input: { params: IdParams },
    rpc: ProjectsRpc.get,
    request: ({ caller, params }) => ({ caller, id: params.id }),
    // A shared view's single read moves with the table's version, as its lists do: 304 without reading it.
    cache: { version: ({ caller, params, request }) => listTag(caller, `get:${params.id}`, request) },
  });
  registerRpcRoute(app, bus, {
    method: "DELETE",
    url: "/Project/Delete/:id",
    tag,
    summary: "Delete a project (Admin or Owner) before its auction exists",
    access: "signed-in",
    input: { params: IdParams },
    rpc: ProjectsRpc.delete,
    request: ({ caller, params }) => ({ caller, id: params.id }),
  });
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/Project/Update",
    tag,
    summary: "Update a project (members)",
    access: "signed-in",
    input: { body: ProjectRequest },
    body: uploadBody,
    rpc: ProjectsRpc.update,
    retry: retryReleased(uploads.ipfs),
    request: async ({ caller, body, request }) => ({
      caller,
      project: await toProjectWrite(body, request),
    }),
  });
  registerRpcRoute(app, bus, {
    method: "POST",
    url: "/Project/Add",
    tag,
    summary: "Propose a project: its file (and image) go to IPFS",
    access: "signed-in",
    input: { body: ProjectRequest },
    body: uploadBody,
    rpc: ProjectsRpc.add,
    retry: retryReleased(uploads.ipfs),
    request: async ({ caller, body, request }) => ({
      caller,
      project: await toProjectWrite(body, request),
    }),
    answer: {
      status: 201,
      // The same proposer's identical Add within 10 minutes: the project it made, 200 (rules.md §8.14).
      statusOf: (added) => (added.existing ? 200 : 201),
      schema: ProjectDto,
      data: ({ existing: _, ...project }) => project,
    },
  });
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/Project/Rate/:id/:rating",
    tag,
    summary: "Rate a project from 0 to 5",
    access: "signed-in",
    input: { params: Type.Object({ id: Int32, rating: Type.Number() }) },
    rpc: ProjectsRpc.rate,
    request: ({ caller, params }) => ({ caller, id: params.id, rating: params.rating }),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/GetByStatus/:status",
    tag,
    summary: "Visible projects with a status: Approved, Pending or Rejected",
    access: "anonymous",
    input: { params: Type.Object({ status: Type.String({ maxLength: 32 }) }) },
    rpc: ProjectsRpc.byStatus,
    request: ({ caller, params }) => ({ caller, status: oneOf(params.status, PROJECT_STATUSES, "status") }),
    cache: {
      version: ({ caller, params, request }) =>
        listTag(caller, `status:${params.status.toLowerCase()}`, request),
    },
  });
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/Project/ChangeStatus/:id",
    tag,
    summary: "Re-derive the status from the chain's ProjectEvaluation now",
    access: "signed-in",
    input: { params: IdParams },
    rpc: ProjectsRpc.syncStatus,
    request: ({ caller, params }) => ({ caller, id: params.id }),
  });
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/Project/UpdateMarkDown/:id/:markdown",
    tag,
    summary: "Replace the markdown; a JSON body {markDown} wins over the path",
    access: "signed-in",
    input: {
      params: Type.Object({ id: Int32, markdown: Type.String() }),
      body: Type.Optional(Type.Union([Type.Null(), Type.Object({ markDown: Type.Optional(Type.String()) })])),
    },
    body: { limit: uploadBodyLimit },
    rpc: ProjectsRpc.updateMarkdown,
    request: ({ caller, params, body }) => ({
      caller,
      id: params.id,
      markDown: body?.markDown ?? params.markdown,
    }),
  });
  for (const url of ["/Project/GetAllPermissioned/:withHex", "/Project/GetAllPermissioned"]) {
    registerRpcRoute(app, bus, {
      method: "GET",
      url,
      tag,
      summary: "Projects where the caller is an accepted member",
      access: "signed-in",
      input: { params: Type.Object({ withHex: Type.Optional(Type.Boolean()) }) },
      rpc: ProjectsRpc.listPermissioned,
      request: ({ caller }) => ({ caller }),
      answer: { data: (projects, { params, request }) => hexIf(projects, params.withHex, request) },
      cache: { revalidate: true },
    });
  }
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/GetAllInvitations",
    tag,
    summary: "Projects where the caller has a pending invitation",
    access: "signed-in",
    input: { querystring: NoInput },
    rpc: ProjectsRpc.listInvited,
    request: ({ caller }) => ({ caller }),
    cache: { revalidate: true },
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/GetProjects/:numberOfProjects",
    tag,
    summary: "The top N visible projects by rating (N ≤ 100; N ≤ 0 an empty list)",
    access: "anonymous",
    input: { params: Type.Object({ numberOfProjects: SignedInt32 }) },
    rpc: ProjectsRpc.top,
    request: ({ caller, params }) => ({ caller, count: params.numberOfProjects }),
    cache: {
      version: ({ caller, params, request }) => listTag(caller, `top:${params.numberOfProjects}`, request),
    },
  });
  for (const url of ["/Project/GetAllHashes/:areOnlyAuctionsStarted", "/Project/GetAllHashes"]) {
    registerRpcRoute(app, bus, {
      method: "GET",
      url,
      tag,
      summary: "File hashes: of started auctions (signed in), or all (admin)",
      access: "signed-in",
      input: { params: Type.Object({ areOnlyAuctionsStarted: Type.Optional(Type.Boolean()) }) },
      rpc: ProjectsRpc.hashes,
      request: ({ caller, params }) => ({
        caller,
        onlyAuctionsStarted: params.areOnlyAuctionsStarted ?? false,
      }),
      cache: { revalidate: true },
    });
  }
  registerRpcRoute(app, bus, {
    method: "PUT",
    url: "/Project/ViewerReply/:id/:reply",
    tag,
    summary: "A viewer accepts (true) or rejects (false) a proposal",
    access: ["Viewer", "Admin"],
    input: { params: Type.Object({ id: Int32, reply: Type.Boolean() }) },
    rpc: ProjectsRpc.viewerReply,
    request: ({ caller, params }) => ({ caller, id: params.id, reply: params.reply }),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Project/ViewerPage/GetAll",
    tag,
    summary: "Projects awaiting a viewer (Viewer, Admin)",
    access: ["Viewer", "Admin"],
    input: { querystring: NoInput },
    rpc: ProjectsRpc.viewerQueue,
    request: ({ caller }) => ({ caller }),
    cache: { revalidate: true },
  });
  for (const url of ["/Project/CreateAuction/:id", "/Project/StartAuction/:id"]) {
    registerRpcRoute(app, bus, {
      method: "PUT",
      url,
      tag,
      summary: "Re-read the project's auction flags from the chain index now (members)",
      access: "signed-in",
      input: { params: IdParams },
      rpc: ProjectsRpc.syncAuction,
      request: ({ caller, params }) => ({ caller, id: params.id }),
    });
  }
}

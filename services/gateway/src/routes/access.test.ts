import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Bus } from "@fundraise/bus";
import { RPC_ROLES, RPCS, type RpcDescriptor } from "@fundraise/protocol";
import Fastify from "fastify";
import { describe, expect, it, vi } from "vitest";
import type { Access } from "../plugins/auth.ts";
import type { Server } from "../server.ts";
import type { UploadDeps } from "../uploads/plugin.ts";
import { registerAuthRoutes } from "./auth.ts";
import { registerEventDebugRoutes } from "./event-debug.ts";
import { registerProjectRoutes } from "./projects.ts";
import { registerUserRoutes } from "./users.ts";

// Who may call a route, said twice on purpose: the gateway's `access` (checked before the request goes on)
// and the role check of the service that answers its RPC (protocol RPC_ROLES, which the users and projects
// services' handlers read: services/users/src/users/access.ts, services/projects/src/projects/
// project.access.ts). Each route of the gateway is joined with its RPC's list here, with no server: the
// route modules register on a bare fastify instance, and `registerRpcRoute` records what it is given.

interface Declared {
  route: string;
  rpc: string;
  access: Access;
}

const declared = vi.hoisted(() => [] as Declared[]);

vi.mock("./define.ts", async (importOriginal) => {
  const actual = await importOriginal<typeof import("./define.ts")>();
  return {
    ...actual,
    registerRpcRoute: (
      _app: unknown,
      _bus: unknown,
      route: { method: string | string[]; url: string; rpc: RpcDescriptor; access: Access },
    ) => {
      for (const method of [route.method].flat()) {
        declared.push({ route: `${method} ${route.url}`, rpc: route.rpc.name, access: route.access });
      }
    },
  };
});

/** The modules whose routes are registered below (app.ts registers the same). */
const REGISTERED = ["routes/auth.ts", "routes/users.ts", "routes/projects.ts", "routes/event-debug.ts"];

async function routeTable(): Promise<Declared[]> {
  declared.length = 0;
  const app = Fastify() as unknown as Server;
  const bus = {} as Bus;
  registerAuthRoutes(app, bus, { authPerMinute: 1, publicAppUrl: "http://localhost" });
  registerUserRoutes(app, bus);
  registerProjectRoutes(app, bus, { uploadBodyLimit: 1, ...({} as UploadDeps) });
  registerEventDebugRoutes(app, bus);
  await app.ready();
  await app.close();
  return [...declared];
}

/** A role list as a set, to compare; null for a route every signed-in (or anonymous) caller may call. */
const rolesOf = (access: Access | readonly string[] | undefined) =>
  Array.isArray(access) ? [...access].sort() : null;

const routes = await routeTable();

describe("each route admits exactly the roles its RPC's service admits", () => {
  it("the route table is the gateway's whole RPC surface", () => {
    // Every module that registers RPC routes is registered here (a new one must be added above).
    const src = join(import.meta.dirname, "..");
    const withRoutes = readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
      .filter((file) => readFileSync(join(src, file), "utf8").includes("registerRpcRoute("));
    expect(withRoutes.sort()).toEqual([...REGISTERED].sort());
    expect(routes.length).toBeGreaterThan(30);
    for (const { rpc } of routes) expect(RPCS.has(rpc), rpc).toBe(true);
  });

  it.each(routes)("$route → $rpc", ({ rpc, access }) => {
    expect(rolesOf(access), "the gateway's access, then its service's roles").toEqual(
      rolesOf(RPC_ROLES[rpc]),
    );
  });

  it("every RPC reserved to roles is the RPC of a route", () => {
    const served = new Set(routes.map((r) => r.rpc));
    for (const rpc of Object.keys(RPC_ROLES)) expect(served.has(rpc), rpc).toBe(true);
  });
});

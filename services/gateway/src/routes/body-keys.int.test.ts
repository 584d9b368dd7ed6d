import { type ContentRef, UsersRpc } from "@fundraise/protocol";
import { harnessOfFile } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import type { RouteEntry } from "../plugins/route-table.ts";
import {
  authHeaders,
  containsValue,
  fillQuery,
  fillUrl,
  type JsonSchema,
  propertiesOf,
  sampleBody,
  startCapturingGateway,
} from "../test/route-samples.ts";

// Body keys match case-insensitively on every route with a body (rules.md §1.3), generated from the
// route table: the RPC request that reaches the bus is the same whatever the casing of the keys.
const gateway = harnessOfFile(startCapturingGateway);

const CASINGS: Record<string, (key: string) => string> = {
  UPPER: (k) => k.toUpperCase(),
  lower: (k) => k.toLowerCase(),
  PascalCase: (k) => k.charAt(0).toUpperCase() + k.slice(1),
  camelCase: (k) => k.charAt(0).toLowerCase() + k.slice(1),
  aLtErNaTiNg: (k) => [...k].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join(""),
};

/** Fields a route takes but does not pass on, on purpose (the reason is the value). */
const NOT_PASSED_ON: Record<string, Record<string, string>> = {
  "/Project/Add": { date: "the server dates a project itself" },
  "/Project/Update": { date: "the server dates a project itself" },
};

const bodyRoutes = () =>
  gateway.h.app.routeTable.filter(
    (r) => r.access !== undefined && Object.keys(propertiesOf(r.schema?.body as JsonSchema)).length > 0,
  );

async function sendBody(route: RouteEntry, body: unknown) {
  gateway.calls.length = 0;
  const res = await gateway.h.app.inject({
    method: route.method as "POST",
    url: fillUrl(route) + fillQuery(route),
    headers: authHeaders(route, gateway.token),
    payload: body as Record<string, unknown>,
  });
  const where = `${route.method} ${route.url} ${JSON.stringify(body)}`;
  expect(res.statusCode, `${where}: ${res.body}`).toBe(409);
  expect(gateway.calls, where).toHaveLength(1);
  return withAddedContent(gateway.calls[0]?.request);
}

/**
 * A project write names the directory its file and image were added as: for comparing, the reference
 * is replaced by the hex of what the node holds of each entry.
 */
async function withAddedContent(request: unknown): Promise<unknown> {
  const project = (request as { project?: { content?: ContentRef | null } } | undefined)?.project;
  if (!project?.content) return request;
  const hex = (await gateway.h.ipfs.hexOf(project.content)) ?? {};
  const content = { fileHex: hex.whitepaper ?? null, imageUrl: hex.image ?? null };
  return { ...(request as object), project: { ...project, content } };
}

describe("body keys in any casing", () => {
  it("finds the body routes of the interface in the route table", () => {
    const found = bodyRoutes().map((r) => `${r.method} ${r.url}`);
    for (const known of [
      "POST /Authentication/Login",
      "POST /Authentication/Register",
      "PUT /user/update",
      "PUT /user/invite",
      "POST /user/invitationreply",
      "DELETE /user/removecollab",
      "POST /Project/Add",
      "PUT /Project/Update",
      "PUT /Project/UpdateMarkDown/:id/:markdown",
    ]) {
      expect(found).toContain(known);
    }
  });

  it("sends the same RPC request for every casing of every route's body keys", async () => {
    for (const route of bodyRoutes()) {
      const body = sampleBody(route.schema?.body as JsonSchema);
      const reference = await sendBody(route, body);
      for (const [name, value] of Object.entries(body)) {
        if (NOT_PASSED_ON[route.url]?.[name]) continue;
        expect(containsValue(reference, value), `${route.method} ${route.url} passes ${name} on`).toBe(true);
      }
      for (const [casing, recase] of Object.entries(CASINGS)) {
        const recased = Object.fromEntries(Object.entries(body).map(([k, v]) => [recase(k), v]));
        expect(await sendBody(route, recased), `${route.method} ${route.url} in ${casing}`).toEqual(
          reference,
        );
      }
      // Numbers sent as JSON strings are numbers too.
      const stringly = Object.fromEntries(
        Object.entries(body).map(([k, v]) => [k, typeof v === "number" ? String(v) : v]),
      );
      expect(await sendBody(route, stringly), `${route.method} ${route.url} numbers as strings`).toEqual(
        reference,
      );
    }
  });

  it("updates name and e-mail from exactly what the web client sends to PUT /User/Update/", async () => {
    gateway.calls.length = 0;
    const res = await gateway.h.app.inject({
      method: "PUT",
      url: "/User/Update/",
      headers: { authorization: `Bearer ${gateway.token}` },
      payload: {
        Username: "ada",
        Name: "Ada",
        surname: "Lovelace",
        MailAddress: "ada@example.org",
        Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      },
    });
    expect(res.statusCode).toBe(409);
    expect(gateway.calls).toEqual([
      {
        name: UsersRpc.update.name,
        request: {
          caller: expect.objectContaining({ userId: 9 }),
          user: { name: "Ada", surname: "Lovelace", username: "ada", mailAddress: "ada@example.org" },
        },
      },
    ]);
  });
});

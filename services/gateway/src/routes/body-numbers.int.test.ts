import { harnessOfFile } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import { INT32_MAX, type NumberKind, numberKindOf } from "../plugins/plain-numbers.ts";
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

// Every integer or number field of every JSON body, from the gateway's route table: plain decimals only
// (rules.md §8.5), 400 in the envelope naming the field before any service is asked, whatever the
// casing of its key. `"282"` and 282 still work (the web client sends numbers as strings).
const gateway = harnessOfFile(startCapturingGateway);

/** Coerced into 282 (or another number) by the validator, before this check. */
const BAD_FOR_INTEGERS: unknown[] = [
  "0x11a",
  " 282",
  "282 ",
  "\t282",
  "282e0",
  "282.0",
  "+282",
  "-282",
  "1_0",
  "282abc",
  "",
  "２８２", // full-width digits
  "Infinity",
  "2147483648",
  "99999999999",
  true,
  false,
  -282,
  282.5,
  2_147_483_648,
  [282],
  { projectID: 282 },
];
const GOOD_FOR_INTEGERS: [unknown, number][] = [
  [282, 282],
  ["282", 282],
  ["000282", 282],
  [INT32_MAX, INT32_MAX],
  [String(INT32_MAX), INT32_MAX],
];
const CASINGS: ((key: string) => string)[] = [
  (k) => k,
  (k) => k.toLowerCase(),
  (k) => k.toUpperCase(),
  (k) => k.charAt(0).toUpperCase() + k.slice(1),
  (k) => k.replace(/ID$/, "Id"),
];

interface Case {
  route: RouteEntry;
  name: string;
  kind: NumberKind;
}

function bodyNumberCases(routes: readonly RouteEntry[]): Case[] {
  return routes.flatMap((route) =>
    Object.entries(propertiesOf(route.schema?.body as JsonSchema | undefined)).flatMap(([name, property]) => {
      const kind = numberKindOf(property);
      return kind ? [{ route, name, kind }] : [];
    }),
  );
}

function send(c: Case, key: string, value: unknown) {
  const body = sampleBody(c.route.schema?.body as JsonSchema);
  delete body[c.name];
  gateway.calls.length = 0;
  return gateway.h.app.inject({
    method: c.route.method as "POST",
    url: fillUrl(c.route) + fillQuery(c.route),
    headers: authHeaders(c.route, gateway.token),
    payload: { ...body, [key]: value },
  });
}

describe("numbers in JSON bodies", () => {
  it("finds the body ids of the interface in the route table", () => {
    const found = bodyNumberCases(gateway.h.app.routeTable).map(
      (c) => `${c.route.method} ${c.route.url} ${c.name}`,
    );
    for (const known of [
      "PUT /Project/Update projectID",
      "POST /Project/Add projectID",
      "PUT /user/invite projectID",
      "POST /user/invite projectID",
      "PUT /user/invitationreply projectID",
      "POST /user/invitationreply projectID",
      "DELETE /user/removecollab projectID",
    ]) {
      expect(found).toContain(known);
    }
  });

  it("refuses every coerced form with 400 naming the field, in any key casing, before any service", async () => {
    const cases = bodyNumberCases(gateway.h.app.routeTable);
    expect(cases.every((c) => c.kind === "integer")).toBe(true);
    for (const c of cases) {
      for (const recase of CASINGS) {
        for (const value of BAD_FOR_INTEGERS) {
          const key = recase(c.name);
          const res = await send(c, key, value);
          const where = `${c.route.method} ${c.route.url} ${key}: ${JSON.stringify(value)}`;
          expect(res.statusCode, where).toBe(400);
          expect(res.headers["x-error-code"], where).toBe("VALIDATION_FAILED");
          expect(res.json(), where).toEqual({
            data: null,
            success: false,
            message: `Invalid body: /${c.name} must be a plain decimal integer from 0 to ${INT32_MAX}.`,
          });
          expect(gateway.calls, where).toEqual([]);
        }
      }
    }
  });

  it("passes plain integers on as numbers, sent as JSON numbers or strings", async () => {
    for (const c of bodyNumberCases(gateway.h.app.routeTable)) {
      for (const recase of CASINGS) {
        for (const [value, number] of GOOD_FOR_INTEGERS) {
          const key = recase(c.name);
          const res = await send(c, key, value);
          const where = `${c.route.method} ${c.route.url} ${key}: ${JSON.stringify(value)}`;
          // The stand-in service answers 409 to whatever reaches it.
          expect(res.statusCode, `${where}: ${res.body}`).toBe(409);
          expect(gateway.calls, where).toHaveLength(1);
          expect(containsValue(gateway.calls[0]?.request, number), where).toBe(true);
        }
      }
    }
  });
});

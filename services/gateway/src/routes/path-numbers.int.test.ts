import { harnessOfFile } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import { INT32_MAX, INT32_MIN, type NumberKind, numericFieldsOf } from "../plugins/plain-numbers.ts";
import type { RouteEntry } from "../plugins/route-table.ts";
import { createHarness } from "../test/harness.ts";
import {
  adminToken,
  authHeaders,
  containsValue,
  fillQuery,
  fillUrl,
  type JsonSchema,
  startCapturingGateway,
} from "../test/route-samples.ts";

// Every integer or number in a path or query string of every route, from the gateway's route table:
// plain decimals only (rules.md §7.4), 400 in the envelope before any service is asked.
const gateway = harnessOfFile(startCapturingGateway);

/** As they appear in the URL: percent-encoded where a raw form could not be sent. */
const BAD_FOR_BOTH = [
  "1e1",
  "1E1",
  "0x10",
  "0xF423F",
  "9.99999e5",
  "+5",
  "+999999",
  "%2B5",
  "%20999999",
  "%205",
  "5%20",
  "%095",
  "99999999999",
  "1_0",
  "0b101",
  "0o17",
  "Infinity",
  "NaN",
  "5,0",
  "%EF%BC%95", // a full-width digit 5
  "%D9%A5", // an Arabic-Indic digit 5
  "five",
];
const BAD: Record<NumberKind, string[]> = {
  integer: [...BAD_FOR_BOTH, "-1", "-0", "5.0", "2147483648", "4294967296"],
  signed: [...BAD_FOR_BOTH, "5.0", "2147483648", "-2147483649", "--1", "-", "-%205", "-+5", "-1e1", "-0x10"],
  number: [...BAD_FOR_BOTH, "-1", "-0", ".5", "5.", "1.2.3"],
};
const GOOD: Record<NumberKind, [string, number][]> = {
  integer: [
    ["5", 5],
    ["0007", 7],
    [String(INT32_MAX), INT32_MAX],
  ],
  signed: [
    ["5", 5],
    ["-1", -1],
    ["-0007", -7],
    [String(INT32_MIN), INT32_MIN],
    [String(INT32_MAX), INT32_MAX],
  ],
  number: [
    ["3", 3],
    ["4.5", 4.5],
  ],
};
const PROBLEM: Record<NumberKind, string> = {
  integer: `must be a plain decimal integer from 0 to ${INT32_MAX}`,
  signed: `must be a plain decimal integer from ${INT32_MIN} to ${INT32_MAX}`,
  number: "must be a plain decimal number",
};

interface Case {
  route: RouteEntry;
  part: "params" | "querystring";
  name: string;
  kind: NumberKind;
}

function numericCases(routes: readonly RouteEntry[]): Case[] {
  return routes.flatMap((route) =>
    (["params", "querystring"] as const).flatMap((part) =>
      numericFieldsOf(route.schema?.[part] as JsonSchema | undefined).map(([name, kind]) => ({
        route,
        part,
        name,
        kind,
      })),
    ),
  );
}

function send(c: Case, raw: string) {
  const url =
    c.part === "params"
      ? fillUrl(c.route, { [c.name]: raw }) + fillQuery(c.route)
      : fillUrl(c.route) + fillQuery(c.route, { [c.name]: raw });
  return gateway.h.app.inject({
    method: c.route.method as "GET",
    url,
    headers: authHeaders(c.route, gateway.token),
  });
}

describe("numbers in paths and query strings", () => {
  it("finds the numeric parameters of the interface in the route table", () => {
    const found = numericCases(gateway.h.app.routeTable).map(
      (c) => `${c.route.method} ${c.route.url} ${c.name}`,
    );
    for (const known of [
      "DELETE /user/deleteuser/:id id",
      "GET /user/getcoowners/:projectID projectID",
      "GET /Project/Get/:id id",
      "PUT /Project/Rate/:id/:rating rating",
      "GET /Project/GetProjects/:numberOfProjects numberOfProjects",
      "PUT /Project/ViewerReply/:id/:reply id",
    ]) {
      expect(found).toContain(known);
    }
  });

  it("takes a sign in GetProjects/{n} only (n ≤ 0 is an empty list); every other integer is unsigned", () => {
    const signed = numericCases(gateway.h.app.routeTable)
      .filter((c) => c.kind === "signed")
      .map((c) => `${c.route.method} ${c.route.url} ${c.name}`);
    expect(signed).toEqual(["GET /Project/GetProjects/:numberOfProjects numberOfProjects"]);
  });

  it("refuses every non-plain form with 400 in the envelope, on every route, before any service", async () => {
    const cases = numericCases(gateway.h.app.routeTable);
    for (const c of cases) {
      for (const raw of BAD[c.kind]) {
        gateway.calls.length = 0;
        const res = await send(c, raw);
        const where = `${c.route.method} ${c.route.url} ${c.name}=${raw}`;
        expect(res.statusCode, where).toBe(400);
        expect(res.headers["x-error-code"], where).toBe("VALIDATION_FAILED");
        expect(res.json(), where).toEqual({
          data: null,
          success: false,
          message: `Invalid ${c.part}: /${c.name} ${PROBLEM[c.kind]}.`,
        });
        expect(gateway.calls, where).toEqual([]);
      }
    }
  });

  it("passes plain decimals on as numbers", async () => {
    for (const c of numericCases(gateway.h.app.routeTable)) {
      for (const [raw, value] of GOOD[c.kind]) {
        gateway.calls.length = 0;
        const res = await send(c, raw);
        const where = `${c.route.method} ${c.route.url} ${c.name}=${raw}`;
        // The stand-in service answers 409 to whatever reaches it.
        expect(res.statusCode, where).toBe(409);
        expect(gateway.calls, where).toHaveLength(1);
        expect(containsValue(gateway.calls[0]?.request, value), where).toBe(true);
      }
    }
  });

  it("deletes no user for DELETE /user/deleteuser/1e1 (it was user 10)", async () => {
    gateway.calls.length = 0;
    const res = await gateway.h.app.inject({
      method: "DELETE",
      url: "/user/deleteuser/1e1",
      headers: { authorization: `Bearer ${gateway.token}` },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      data: null,
      success: false,
      message: `Invalid params: /id must be a plain decimal integer from 0 to ${INT32_MAX}.`,
    });
    expect(gateway.calls).toEqual([]);
  });

  it("answers 400 for a bad id even where the service behind the route is not running", async () => {
    const bare = await createHarness();
    try {
      const admin = await adminToken(bare);
      const bad = await bare.app.inject({
        method: "PUT",
        url: "/Project/ChangeStatus/0x10",
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(bad.statusCode).toBe(400);
      const good = await bare.app.inject({
        method: "PUT",
        url: "/Project/ChangeStatus/16",
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(good.statusCode).toBe(503);
    } finally {
      await bare.close();
    }
  });
});

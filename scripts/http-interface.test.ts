import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// docs/http-interface.md indexes the routes of the gateway's OpenAPI document (packages/client/openapi.json,
// generated from the routes and checked fresh by the client's tests): who may call each, and which rules
// decide it. Here the index and the document name the same routes with the same methods.
const root = join(import.meta.dirname, "..");
const METHODS = ["get", "put", "post", "delete", "patch"] as const;

function documentRoutes(): string[] {
  const document = JSON.parse(readFileSync(join(root, "packages/client/openapi.json"), "utf8")) as {
    paths: Record<string, Partial<Record<(typeof METHODS)[number], unknown>>>;
  };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    METHODS.filter((method) => operations[method] !== undefined).map((m) => `${m.toUpperCase()} ${path}`),
  );
}

/** The index's rows `| GET, PUT | `/a`, `/b` | …`: each method with each path. */
function indexedRoutes(): string[] {
  const text = readFileSync(join(root, "docs/http-interface.md"), "utf8");
  return [
    ...text.matchAll(
      // Cells padded as the formatter aligns the table.
      /^\| ((?:GET|PUT|POST|DELETE|PATCH)(?:, (?:GET|PUT|POST|DELETE|PATCH))*) *\| ([^|]+) \|/gm,
    ),
  ].flatMap(([, methods, paths]) => {
    const urls = [...paths!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    return methods!.split(", ").flatMap((method) => urls.map((url) => `${method} ${url}`));
  });
}

describe("docs/http-interface.md", () => {
  it("lists every route of the OpenAPI document, and no other", () => {
    const indexed = indexedRoutes();
    expect(new Set(indexed).size, "a route listed twice").toBe(indexed.length);
    expect([...indexed].sort()).toEqual(documentRoutes().sort());
  });
});

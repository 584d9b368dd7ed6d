// CI's staleness check: the committed openapi.json and src/generated/schema.ts are what the gateway gives now.
import path from "node:path";
import { expect, it } from "vitest";
import { committed, documentPath, generate, packageDir, schemaPath } from "../scripts/openapi.ts";

/** The first line where two texts differ, for the failure message. */
function firstDifference(fresh: string, old: string): string {
  const a = fresh.split("\n");
  const b = old.split("\n");
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line === -1 ? a.length : line;
  return `line ${at + 1}: generated ${JSON.stringify(a[at] ?? "<end>")}, committed ${JSON.stringify(b[at] ?? "<end>")}`;
}

it("the committed OpenAPI document and types are the gateway's current ones", async () => {
  const fresh = await generate();
  const old = committed();
  const stale = [
    [documentPath, fresh.document, old.document],
    [schemaPath, fresh.schema, old.schema],
  ]
    .filter(([, a, b]) => a !== b)
    .map(([file, a, b]) => `${path.relative(packageDir, file as string)} (${firstDifference(a!, b!)})`);
  expect(stale, `stale: ${stale.join("; ")}. Run pnpm client:generate and commit the result.`).toEqual([]);
});

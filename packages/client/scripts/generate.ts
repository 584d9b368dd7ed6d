// `pnpm client:generate`: the gateway's OpenAPI document to openapi.json, its types to src/generated/schema.ts.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { committed, documentPath, generate, packageDir, schemaPath } from "./openapi.ts";

const fresh = await generate();
const before = committed();
for (const [file, text, old] of [
  [documentPath, fresh.document, before.document],
  [schemaPath, fresh.schema, before.schema],
] as const) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`${path.relative(packageDir, file)}: ${text === old ? "unchanged" : "written"}`);
}

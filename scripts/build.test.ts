import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { buildTarget, buildTargets, missingDependencies } from "./build.ts";

// `pnpm build`'s own rules; that every service starts from its output is e2e/built.test.ts, what the image
// holds is image.test.ts.
const root = join(import.meta.dirname, "..");

describe("pnpm build", () => {
  it("names a package a bundle imports that its package does not list", () => {
    const [users] = buildTargets(["users"]);
    const metafile = {
      inputs: {},
      outputs: {
        [join("services", "users", "dist", "main.js")]: {
          bytes: 1,
          inputs: {},
          exports: [],
          imports: [
            { path: "pino", kind: "import-statement" as const, external: true },
            { path: "node:fs", kind: "import-statement" as const, external: true },
            { path: "left-pad/sub", kind: "import-statement" as const, external: true },
          ],
        },
      },
    };
    expect(missingDependencies(users!, metafile)).toEqual(["left-pad"]);
  });

  it("names an external package that would load a second copy of an inlined one", () => {
    const [gateway] = buildTargets(["gateway"]);
    const out = join("services", "gateway", "dist", "main.js");
    const imports = [
      { path: "@fastify/type-provider-typebox", kind: "import-statement" as const, external: true },
    ];
    const metafile = { inputs: {}, outputs: { [out]: { bytes: 1, inputs: {}, exports: [], imports } } };
    expect(missingDependencies(gateway!, metafile)).toEqual([
      "@fastify/type-provider-typebox (imports an inlined package)",
    ]);
  });

  it("bundles workspace modules that run nothing at import (the build marks them free of side effects)", async () => {
    const offenders: string[] = [];
    for (const target of buildTargets()) {
      const { inputs, missing } = await buildTarget(target);
      expect(missing, target.dir).toEqual([]);
      for (const input of inputs.filter(
        (file) => file.startsWith("packages/") && file !== join(target.dir, target.entry),
      )) {
        const source = ts.createSourceFile(
          input,
          readFileSync(join(root, input), "utf8"),
          ts.ScriptTarget.Latest,
        );
        for (const statement of source.statements) {
          if (
            ts.isExpressionStatement(statement) ||
            ts.isForStatement(statement) ||
            ts.isIfStatement(statement)
          ) {
            offenders.push(`${input}: ${statement.getText(source).slice(0, 60)}`);
          }
        }
      }
    }
    expect([...new Set(offenders)]).toEqual([]);
  }, 60_000);
});

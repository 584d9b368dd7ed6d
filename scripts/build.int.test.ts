import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { buildTarget, buildTargets } from "./build.ts";

// `pnpm build` over every target (esbuild, several seconds on two cores): what the bundles hold. Its rules
// on a given bundle's imports are build.test.ts.
const root = join(import.meta.dirname, "..");

describe("pnpm build", () => {
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

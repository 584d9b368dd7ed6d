import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildTargets, missingDependencies } from "./build.ts";

// `pnpm build`'s own rules; that every service starts from its output is e2e/built.test.ts, what the image
// holds is image.int.test.ts; the bundles themselves (esbuild over every target) are build.int.test.ts.

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
});

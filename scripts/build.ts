/**
 * `pnpm build`: runnable JavaScript for every service (`services/<name>/dist/main.js`), the tracing preload
 * (`packages/service-kit/dist/telemetry.js`) and the contracts' deploy command
 * (`packages/contracts/dist/deploy.js`), as the image runs them (docs/adr/0032-built-javascript-image.md).
 *
 * esbuild bundles each entry point with the workspace packages (`@fundraise/*`, TypeScript sources) inlined
 * and every third-party package left as an import, resolved at run time from the node_modules that pnpm
 * installed for that package. pnpm links only a package's own dependencies into its node_modules, so a
 * bundle that imports `pino` through service-kit needs `pino` among its service's dependencies: the build
 * checks each such import against `<package>/node_modules` (not the root's, which holds the dev tools and
 * would hide a gap) and fails naming what is missing.
 *
 * `pnpm build -- users gateway` builds those services only. Sources stay the truth; dist/ is git-ignored.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { basename, dirname, join, relative } from "node:path";
import {
  build,
  type Metafile,
  type OnResolveArgs,
  type OnResolveResult,
  type Plugin,
  type ResolveResult,
} from "esbuild";

const root = join(import.meta.dirname, "..");

export interface BuildTarget {
  /** The package folder, relative to the root: where its node_modules and dist/ are. */
  dir: string;
  /** The entry point, relative to `dir`. */
  entry: string;
  /** The output file, relative to `dir`. */
  out: string;
  /**
   * Modules the entry imports with `import()` go to chunks of their own beside it, loaded only when that
   * import runs (the tracing preload's SDK: nothing of OpenTelemetry loads while tracing is off).
   */
  splitting?: boolean;
}

/** Every service of `services/` (those with a `src/main.ts`). */
export function serviceNames(): string[] {
  return readdirSync(join(root, "services"))
    .filter((name) => existsSync(join(root, "services", name, "src", "main.ts")))
    .sort();
}

export function buildTargets(services: readonly string[] = serviceNames()): BuildTarget[] {
  return [
    ...services.map((name) => ({
      dir: join("services", name),
      entry: join("src", "main.ts"),
      out: join("dist", "main.js"),
    })),
    // The tracing preload every service starts with (scripts/lib/processes.ts, BUILT_TELEMETRY).
    {
      dir: join("packages", "service-kit"),
      entry: join("src", "telemetry.ts"),
      out: join("dist", "telemetry.js"),
      splitting: true,
    },
    {
      dir: join("packages", "contracts"),
      entry: join("scripts", "deploy.ts"),
      out: join("dist", "deploy.js"),
    },
  ];
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}

const builtins = new Set(builtinModules);
const isBuiltin = (specifier: string) => specifier.startsWith("node:") || builtins.has(specifier);

const workspacePackages = join(root, "packages");

/**
 * Third-party packages bundled in all the same: pure JavaScript that loads nothing by path, in many small
 * modules. typebox alone was 683 of the 1,750 modules a service loaded at start-up. No package left
 * external may import one of them at run time (it would load a second copy): the build checks it.
 */
export const INLINED = ["typebox"];

/**
 * Workspace packages are bundled from their sources; every other bare import stays an import. Their
 * modules are marked free of side effects (none runs anything at import; a test fails if one starts to):
 * a module none of whose exports a service uses is left out with its imports, so the gateway, which uses
 * service-kit's runService but no ORM, does not load MikroORM's PostgreSQL driver and migrator at start-up.
 */
const thirdPartyExternal: Plugin = {
  name: "third-party-external",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind === "entry-point") return undefined;
      if (INLINED.includes(packageName(args.path))) return undefined;
      if (!args.path.startsWith("@fundraise/")) return { path: args.path, external: true };
      if (args.pluginData === "resolving") return undefined;
      return sideEffectFree(await b.resolve(args.path, { ...resolveOptions(args), pluginData: "resolving" }));
    });
    b.onResolve({ filter: /^\.\.?\// }, async (args) => {
      if (args.kind === "entry-point" || args.pluginData === "resolving") return undefined;
      if (!args.importer.startsWith(workspacePackages)) return undefined;
      return sideEffectFree(await b.resolve(args.path, { ...resolveOptions(args), pluginData: "resolving" }));
    });
  },
};

function resolveOptions(args: OnResolveArgs) {
  return { importer: args.importer, resolveDir: args.resolveDir, kind: args.kind };
}

function sideEffectFree(result: ResolveResult): OnResolveResult {
  if (result.errors.length > 0) return { errors: result.errors };
  const inWorkspace = result.path.startsWith(workspacePackages);
  return { path: result.path, external: result.external, ...(inWorkspace ? { sideEffects: false } : {}) };
}

/** The third-party packages a bundle (its chunks included) imports that its package's node_modules does not have. */
export function missingDependencies(target: BuildTarget, metafile: Metafile): string[] {
  if (!metafile.outputs[join(target.dir, target.out)]) {
    throw new Error(`esbuild wrote no ${join(target.dir, target.out)}`);
  }
  const packages = new Set(
    Object.values(metafile.outputs)
      .flatMap((output) => output.imports)
      .filter((i) => i.external && !isBuiltin(i.path))
      .map((i) => packageName(i.path)),
  );
  const missing = [...packages].filter((name) => !existsSync(join(root, target.dir, "node_modules", name)));
  // An external package that imports an inlined one would load it a second time, from node_modules.
  const doubled = [...packages]
    .filter((name) => existsSync(join(root, target.dir, "node_modules", name)))
    .filter((name) => {
      const manifest = JSON.parse(
        readFileSync(join(root, target.dir, "node_modules", name, "package.json"), "utf8"),
      ) as Record<string, Record<string, string> | undefined>;
      const needs = {
        ...manifest.dependencies,
        ...manifest.peerDependencies,
        ...manifest.optionalDependencies,
      };
      return INLINED.some((inlined) => inlined in needs);
    })
    .map((name) => `${name} (imports an inlined package)`);
  return [...missing, ...doubled].sort();
}

export async function buildTarget(
  target: BuildTarget,
): Promise<{ ms: number; bytes: number; missing: string[]; inputs: string[] }> {
  const started = performance.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(target.dir, target.entry)],
    ...(target.splitting
      ? {
          splitting: true,
          outdir: join(target.dir, dirname(target.out)),
          entryNames: basename(target.out, ".js"),
          chunkNames: `${basename(target.out, ".js")}-[name]-[hash]`,
        }
      : { outfile: join(target.dir, target.out) }),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    // MikroORM and the logs read class and function names: bundling must not rename them.
    keepNames: true,
    sourcemap: "linked",
    metafile: true,
    write: false,
    logLevel: "warning",
    plugins: [thirdPartyExternal],
  });
  // Each file whole or not at all: written beside, then renamed over the old one, so a process starting
  // while another build runs (two test files at once) never reads half a bundle.
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const partial = `${file.path}.${process.pid}.partial`;
    writeFileSync(partial, file.contents);
    renameSync(partial, file.path);
  }
  const missing = missingDependencies(target, result.metafile);
  const bytes = result.metafile.outputs[join(target.dir, target.out)]?.bytes ?? 0;
  // The source files in the bundle, relative to the root.
  const inputs = Object.keys(result.metafile.inputs);
  return { ms: performance.now() - started, bytes, missing, inputs };
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => a !== "--");
  const unknown = wanted.filter((name) => !serviceNames().includes(name));
  if (unknown.length > 0) throw new Error(`no such service: ${unknown.join(", ")}`);
  const targets = wanted.length > 0 ? buildTargets(wanted) : buildTargets();
  const started = performance.now();
  // One after another: esbuild already uses every core for one bundle.
  const gaps: string[] = [];
  for (const target of targets) {
    const { ms, bytes, missing } = await buildTarget(target);
    const file = relative(root, join(root, target.dir, target.out));
    process.stdout.write(`${file}  ${(bytes / 1024).toFixed(0)} KiB  ${ms.toFixed(0)} ms\n`);
    if (missing.length > 0) gaps.push(`${join(target.dir, "package.json")}: ${missing.join(", ")}`);
  }
  if (gaps.length > 0) {
    throw new Error(
      "bundles import packages their package.json does not list (the image resolves them from that " +
        "package's node_modules: add them to its dependencies), or that import an inlined package " +
        `(drop it from INLINED):\n${gaps.join("\n")}`,
    );
  }
  process.stdout.write(`built ${targets.length} in ${(performance.now() - started).toFixed(0)} ms\n`);
}

if (process.argv[1] === import.meta.filename) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

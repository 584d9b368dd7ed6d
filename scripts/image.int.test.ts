/**
 * The image's contents, without a Docker daemon: the Dockerfile's own file-selection steps run here, into
 * a temporary folder laid out as the runtime's /app (the manifests stage's `cp`, the prod-deps stage's
 * `pnpm install --prod`, offline from this machine's pnpm store, and the output stage's `cp` of the built
 * bundles), then the tree is checked (no tests, no sources, no dev dependencies) and a service is started
 * from it: its bundle resolves every import from the production node_modules alone, without the root's
 * dev tools that a checkout has.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createTestVhost, type TestVhost } from "@fundraise/bus/testing";
import { type AnvilInstance, startAnvil } from "@fundraise/contracts/testing";
import { createTestDatabase, type TestDatabase } from "@fundraise/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTarget, buildTargets } from "./build.ts";
import { freePort, serviceNodeArgs, stopProcess } from "./lib/processes.ts";

const root = join(import.meta.dirname, "..");
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");

/** The shell command of a stage's RUN instructions (continuation lines joined, cache mounts dropped). */
function runOf(stage: string): string[] {
  const start = dockerfile.search(new RegExp(`^FROM \\S+ AS ${stage}$`, "m"));
  expect(start, stage).toBeGreaterThanOrEqual(0);
  const rest = dockerfile.slice(start + 1);
  const body = rest.slice(0, rest.search(/^FROM /m) === -1 ? undefined : rest.search(/^FROM /m));
  return [...body.replace(/\\\n/g, " ").matchAll(/^RUN (.*)$/gm)].map(([, command]) =>
    (command as string).replace(/--mount=\S+\s+/g, "").trim(),
  );
}

interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Every package.json of the workspace (root, packages/*, services/*). */
function manifests(): Manifest[] {
  const files = ["package.json"];
  for (const dir of ["packages", "services"]) {
    for (const name of readdirSync(join(root, dir))) {
      if (existsSync(join(root, dir, name, "package.json"))) files.push(join(dir, name, "package.json"));
    }
  }
  return files.map((file) => JSON.parse(readFileSync(join(root, file), "utf8")) as Manifest);
}

/** The package.json of every package installed under the tree's node_modules/.pnpm. */
function installedManifests(): (Manifest & { peerDependencies?: object; optionalDependencies?: object })[] {
  const store = join(app, "node_modules", ".pnpm");
  return readdirSync(store).flatMap((entry) => {
    const modules = join(store, entry, "node_modules");
    if (!existsSync(modules)) return [];
    return readdirSync(modules, { withFileTypes: true })
      .flatMap((d) =>
        d.name.startsWith("@")
          ? readdirSync(join(modules, d.name), { withFileTypes: true }).map((s) => ({
              dir: join(modules, d.name, s.name),
              link: s.isSymbolicLink(),
            }))
          : [{ dir: join(modules, d.name), link: d.isSymbolicLink() }],
      )
      .filter(({ dir, link }) => !link && existsSync(join(dir, "package.json")))
      .map(({ dir }) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")));
  });
}

/** Every file under `dir`, relative to it, node_modules excluded. */
function filesOf(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules") return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesOf(path, base) : [relative(base, path)];
  });
}

const work = mkdtempSync(join(tmpdir(), "fundraise-image-"));
const app = join(work, "app");
/** Packages a bundle imports that its package does not list (the build's own check). */
const unlisted: string[] = [];
const sh = (command: string, cwd: string) =>
  execFileSync("sh", ["-c", command], { cwd, stdio: "pipe", env: { ...process.env, CI: "true" } });

beforeAll(async () => {
  // The output stage copies from the build stage's `pnpm build`.
  for (const target of buildTargets()) {
    const { missing } = await buildTarget(target);
    if (missing.length > 0) unlisted.push(`${target.dir}: ${missing.join(", ")}`);
  }
  const [manifestsCopy] = runOf("manifests");
  const [install] = runOf("prod-deps");
  const [outputCopy] = runOf("output");
  expect(install).toMatch(/^pnpm install --frozen-lockfile --prod --store-dir \/pnpm-store$/);
  sh((manifestsCopy as string).replaceAll("/manifests", app), root);
  const store = execFileSync("pnpm", ["store", "path"], { cwd: root, encoding: "utf8" }).trim();
  sh(`${(install as string).replace("/pnpm-store", store)} --offline --reporter=silent`, app);
  // `COPY --from=output /output ./`
  const output = join(work, "output");
  sh((outputCopy as string).replaceAll("/output", output), root);
  sh(`cp -a ${output}/. ${app}/`, root);
}, 240_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the runtime image's /app", () => {
  it("holds the bundles and the manifests, no sources, tests or source maps", () => {
    expect(unlisted).toEqual([]);
    const files = filesOf(app);
    const services = readdirSync(join(root, "services")).filter((name) =>
      existsSync(join(root, "services", name, "src", "main.ts")),
    );
    for (const name of services) expect(files).toContain(join("services", name, "dist", "main.js"));
    expect(files).toContain(join("packages", "contracts", "dist", "deploy.js"));
    expect(files).toContain(join("packages", "service-kit", "dist", "telemetry.js"));
    const unexpected = files.filter(
      (file) =>
        !/^(services|packages)\/[^/]+\/package\.json$/.test(file) &&
        !/^(services\/[^/]+\/dist\/main|packages\/contracts\/dist\/deploy|packages\/service-kit\/dist\/telemetry[\w-]*)\.js$/.test(
          file,
        ) &&
        !/^(package\.json|pnpm-lock\.yaml|pnpm-workspace\.yaml|patches\/[^/]+\.patch)$/.test(file),
    );
    expect(unexpected).toEqual([]);
    expect(files.filter((file) => /\.test\.|\.ts$|\.map$/.test(file))).toEqual([]);
  });

  it("has no development dependency installed", () => {
    const installed = readdirSync(join(app, "node_modules", ".pnpm"));
    const all = manifests();
    const production = new Set(all.flatMap((m) => Object.keys(m.dependencies ?? {})));
    const devOnly = [...new Set(all.flatMap((m) => Object.keys(m.devDependencies ?? {})))].filter(
      (name) => !production.has(name) && !name.startsWith("@fundraise/"),
    );
    // The tools by name too, whoever lists them.
    const tools = ["tsx", "esbuild", "typescript", "vitest", "@biomejs/biome", "solc", "@foundry-rs/anvil"];
    for (const tool of tools) {
      expect(devOnly).toContain(tool);
    }
    // pnpm's store folder names: `name@version…`, a scope's slash as `+`. A package that the workspace lists
    // for development only may still be there as what a production package depends on (ajv under fastify):
    // it must then be one that an installed package names.
    const needed = new Set(
      installedManifests().flatMap((m) =>
        Object.keys({ ...m.dependencies, ...m.peerDependencies, ...m.optionalDependencies }),
      ),
    );
    const found = devOnly.filter(
      (name) =>
        installed.some((entry) => entry.startsWith(`${name.replace("/", "+")}@`)) && !needed.has(name),
    );
    expect(found).toEqual([]);
    for (const tool of tools) {
      expect(installed.filter((entry) => entry.startsWith(`${tool.replace("/", "+")}@`))).toEqual([]);
    }
    // And the root links none (a checkout's root node_modules holds every dev tool).
    expect(readdirSync(join(app, "node_modules")).filter((entry) => !entry.startsWith("."))).toEqual([]);
  });

  describe("a service started from it", () => {
    let db: TestDatabase;
    let vhost: TestVhost;
    let child: ChildProcess | undefined;

    beforeAll(async () => {
      [db, vhost] = await Promise.all([createTestDatabase("image"), createTestVhost("image")]);
    });
    afterAll(async () => {
      if (child) await stopProcess(child);
      await Promise.all([db?.dispose(), vhost?.dispose()]);
    });

    it("is ready on its /readyz: its bundle finds every import in the production node_modules", async () => {
      const port = await freePort();
      let output = "";
      // As run-service starts it: the built tracing preload, then the bundle.
      child = spawn(process.execPath, serviceNodeArgs("users", [], "built"), {
        cwd: app,
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: db.url,
          AMQP_URL: vhost.url,
          HEALTH_PORT: String(port),
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.on("data", (c) => (output += c));
      child.stderr?.on("data", (c) => (output += c));
      const until = Date.now() + 60_000;
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) break;
        if (child.exitCode !== null || Date.now() > until)
          throw new Error(`users did not come up:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }, 90_000);
  });

  it("deploys the contracts with the contracts target's entry point (its bundle and ethers alone)", async () => {
    const entry = /^ENTRYPOINT \[(.*)\]$/m.exec(dockerfile.slice(dockerfile.indexOf("AS contracts")))?.[1];
    const args = JSON.parse(`[${entry}]`) as string[];
    expect(args[0]).toBe("node");
    let anvil: AnvilInstance | undefined;
    try {
      anvil = await startAnvil();
      const out = join(work, "deployment.json");
      execFileSync(process.execPath, [...args.slice(1), "--out", out], {
        cwd: app,
        env: { PATH: process.env.PATH, CHAIN_RPC_URL: anvil.url },
        stdio: "pipe",
      });
      expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({ registry: expect.stringMatching(/^0x/) });
    } finally {
      await anvil?.stop();
    }
  }, 90_000);
});

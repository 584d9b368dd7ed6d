/**
 * The deployment artefacts as a user runs them: docker-compose.yml as `docker compose` reads it (merge keys,
 * `${VAR:-default}` interpolation) checked against the Compose Specification's JSON schema, the Dockerfile's
 * pins, and deploy/k8s rendered by kustomize and checked against the Kubernetes schemas; then the points
 * of the deployment that must hold (restart policies, health checks, probes, every service present, …).
 * The schemas come from npm packages (dclint ships compose-spec's schema, kubernetes-models validators
 * generated from the Kubernetes OpenAPI), so nothing is fetched at test time.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ajv } from "ajv";
import { Deployment } from "kubernetes-models/apps/v1";
import { Job } from "kubernetes-models/batch/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Namespace, Secret, Service } from "kubernetes-models/v1";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { serviceNodeArgs } from "./lib/processes.ts";

const root = join(import.meta.dirname, "..");
const require = createRequire(import.meta.url);
const read = (path: string) => readFileSync(join(root, path), "utf8");

/** Every service of the workspace: a folder of services/ with a main.ts. */
const services = readdirSync(join(root, "services"))
  .filter((name) => existsSync(join(root, "services", name, "src", "main.ts")))
  .sort();
const infrastructure = ["postgres", "redis", "rabbitmq", "kubo", "anvil", "mailpit"];
/** The variables the services declare: their config.ts files and the shared schemas of service-kit and ipfs. */
const declaredVariables = [
  ...services.map((name) => `services/${name}/src/config.ts`),
  "packages/service-kit/src/config.ts",
  "packages/ipfs/src/config.ts",
]
  .map(read)
  .join("\n");
const isDeclared = (name: string) => new RegExp(`\\b${name}: Type\\.`).test(declaredVariables);
/** Services that read the contracts' deployment file (CHAIN_DEPLOYMENT_FILE, or service-kit's ChainEnv with it). */
const chainAware = services.filter((name) =>
  /\bChainEnv\b|\bCHAIN_DEPLOYMENT_FILE\b/.test(read(`services/${name}/src/config.ts`)),
);

// ── docker compose ───────────────────────────────────────────────────────────────────────────────────

/** Compose's interpolation: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$$`, as `docker compose config` does it. */
function interpolate(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === "string") {
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)-([^}]*))?\}/g,
      (match, name: string, colon: string, fallback: string | undefined) => {
        if (match === "$$") return "$";
        const set = env[name];
        if (fallback === undefined) return set ?? "";
        // `:-` also replaces an empty value, `-` only an unset one.
        return (colon ? set : (set ?? fallback)) || fallback;
      },
    );
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  }
  return value;
}

interface ComposeService {
  image?: string;
  build?: { context: string; target?: string };
  restart?: string;
  init?: boolean;
  stop_grace_period?: string;
  user?: string;
  command?: string | string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[]; start_period?: string };
  depends_on?: Record<string, { condition: string }>;
  container_name?: string;
}
interface ComposeFile {
  name: string;
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
}

/** docker-compose.yml with merge keys resolved and every variable interpolated from `env`. */
function renderCompose(env: Record<string, string | undefined> = {}): ComposeFile {
  return interpolate(parse(read("docker-compose.yml"), { merge: true }), env) as ComposeFile;
}

/** Seconds of a Compose duration such as `1m5s` or `65s`. */
function seconds(duration: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  for (const [, amount, unit] of duration.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    total += Number(amount) * (units[unit as string] ?? 0);
  }
  return total;
}

describe("docker-compose.yml", () => {
  const compose = renderCompose();
  const raw = parse(read("docker-compose.yml"), { merge: true }) as ComposeFile;

  it("is valid against the Compose Specification schema", () => {
    const schema = JSON.parse(
      readFileSync(
        join(require.resolve("dclint/package.json"), "..", "schemas", "compose.schema.json"),
        "utf8",
      ),
    );
    // The schema names draft-07 by an https URL Ajv does not list; Ajv's default dialect is draft-07.
    const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
    // Go durations (`65s`, `1m30s`), the format compose-spec's schema names.
    ajv.addFormat("duration", /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
    const validate = ajv.compile(schema);
    expect(validate(compose) ? [] : validate.errors).toEqual([]);
  });

  it("runs every service of the workspace from the one image, each scalable", () => {
    for (const name of services) {
      const service = compose.services[name];
      expect(service, `service ${name}`).toBeDefined();
      expect(service?.environment?.SERVICE).toBe(name);
      expect(service?.image).toBe("fundraise/backend:local");
      expect(service?.build?.target).toBe("runtime");
      // A fixed container name or a host port would stop `--scale`; only the gateway publishes one.
      expect(service?.container_name).toBeUndefined();
      if (name !== "gateway") expect(service?.ports, name).toBeUndefined();
    }
  });

  it("gives each service init, a restart policy, a grace period that covers its ordered shutdown and a health check", () => {
    // packages/service-kit/src/shutdown.ts: each step bounded by 10 s; runService registers up to six.
    const graceMs = Number(
      /graceMs = ([\d_]+)/.exec(read("packages/service-kit/src/shutdown.ts"))?.[1]?.replace(/_/g, ""),
    );
    expect(graceMs).toBeGreaterThan(0);
    const steps = (read("packages/service-kit/src/run-service.ts").match(/shutdown\.add\(/g) ?? []).length;
    for (const name of services) {
      const service = compose.services[name] as ComposeService;
      expect(service.init, name).toBe(true);
      expect(service.restart, name).toBe("unless-stopped");
      expect(seconds(service.stop_grace_period ?? "10s"), name).toBeGreaterThanOrEqual(
        (steps * graceMs) / 1000,
      );
      expect(service.healthcheck?.test.join(" "), name).toContain(
        name === "gateway" ? "127.0.0.1:8080/readyz" : "127.0.0.1:9465/readyz",
      );
      if (name !== "gateway") {
        expect(service.environment?.HEALTH_PORT, name).toBe("9465");
        expect(service.environment?.HEALTH_HOST, name).toBe("0.0.0.0");
      }
    }
  });

  it("gives the chain indexer what it reads, the contracts' addresses included", () => {
    const indexer = compose.services["chain-indexer"] as ComposeService;
    for (const variable of [
      "CHAIN_RPC_URL",
      "CHAIN_DEPLOYMENT_FILE",
      "DATABASE_URL",
      "AMQP_URL",
      "REDIS_URL",
    ]) {
      expect(indexer.environment?.[variable], variable).toBeTruthy();
    }
    expect(indexer.volumes).toContain("deployment:/deployment:ro");
    expect(indexer.depends_on?.contracts?.condition).toBe("service_completed_successfully");
  });

  it("deploys the contracts only when the chain has none, from its own image target", () => {
    const contracts = compose.services.contracts as ComposeService;
    expect(contracts.build?.target).toBe("contracts");
    expect(contracts.restart).toBe("no");
    expect(contracts.command).toContain("--keep-existing");
    expect(contracts.command).toContain("/deployment/local.json");
    expect(contracts.volumes).toContain("deployment:/deployment");
    expect(chainAware).toEqual(expect.arrayContaining(["auth", "chain-indexer"]));
    for (const name of chainAware) {
      const service = compose.services[name] as ComposeService;
      expect(service.depends_on?.contracts?.condition, name).toBe("service_completed_successfully");
      expect(service.volumes, name).toContain("deployment:/deployment:ro");
      expect(service.environment?.CHAIN_DEPLOYMENT_FILE, name).toBe("/deployment/local.json");
    }
  });

  it("keeps the chain across restarts: anvil state on a volume", () => {
    const anvil = compose.services.anvil as ComposeService;
    const command = [anvil.command].flat().join(" ");
    const state = /--state (\S+)/.exec(command)?.[1] ?? "";
    expect(state).not.toBe("");
    const mount = anvil.volumes?.find((volume) => state.startsWith(`${volume.split(":")[1]}/`));
    expect(mount, "a named volume holds the state file").toBeDefined();
    expect(compose.volumes).toHaveProperty((mount as string).split(":")[0] as string);
  });

  it("restarts and health-checks every infrastructure part, on pinned images", () => {
    for (const name of infrastructure) {
      const service = compose.services[name] as ComposeService;
      expect(service, name).toBeDefined();
      expect(service.restart, name).toBe("unless-stopped");
      expect(service.healthcheck?.test.length, name).toBeGreaterThan(0);
      expect(service.image, name).toMatch(/^[^:]+:(?!latest$)[\w.-]+$/);
    }
    // Over TCP, not the socket the initialising entry point serves.
    expect(compose.services.postgres?.healthcheck?.test).toEqual(
      expect.arrayContaining(["pg_isready", "-h", "127.0.0.1"]),
    );
    const redis = compose.services.redis as ComposeService;
    expect([redis.command].flat().join(" ")).toContain("--appendonly yes");
    expect(redis.volumes?.some((volume) => volume.endsWith(":/data"))).toBe(true);
    expect(compose.services.auth?.depends_on?.mailpit?.condition).toBe("service_healthy");
  });

  it("publishes infrastructure on loopback only, on ports a variable can move", () => {
    for (const name of infrastructure) {
      for (const port of raw.services[name]?.ports ?? []) {
        expect(port, name).toMatch(/^127\.0\.0\.1:\$\{[A-Z_]+_PORT:-\d+\}:\d+$/);
      }
    }
    expect(compose.services.postgres?.ports).toEqual(["127.0.0.1:5432:5432"]);
    expect(renderCompose({ POSTGRES_PORT: "15432" }).services.postgres?.ports).toEqual([
      "127.0.0.1:15432:5432",
    ]);
  });

  it("names only services that exist under depends_on, and only volumes it declares", () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect(compose.services, `${name} → ${dependency}`).toHaveProperty(dependency);
      }
      for (const volume of service.volumes ?? []) {
        expect(compose.volumes, `${name}: ${volume}`).toHaveProperty(volume.split(":")[0] as string);
      }
    }
  });
});

// ── the image ────────────────────────────────────────────────────────────────────────────────────────

describe("Dockerfile", () => {
  const dockerfile = read("Dockerfile");
  const manifest = JSON.parse(read("package.json")) as {
    packageManager: string;
    dependencies?: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map(([, from, name]) => ({
    from,
    name,
  }));

  it("pins the base image to the workspace's Node and pnpm to packageManager's version", () => {
    expect(dockerfile).toContain(`ARG NODE_IMAGE=node:${manifest.devDependencies.node}-bookworm-slim`);
    expect(`pnpm@${/^ARG PNPM_VERSION=(\S+)$/m.exec(dockerfile)?.[1]}`).toBe(manifest.packageManager);
  });

  it("installs production dependencies only in the images; tsx and esbuild are dev tools", () => {
    const prodDeps = dockerfile.slice(dockerfile.indexOf("AS prod-deps"), dockerfile.indexOf("AS app"));
    expect(prodDeps).toMatch(/pnpm install --frozen-lockfile --prod\b/);
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.devDependencies.tsx).toBeDefined();
    expect(manifest.devDependencies.esbuild).toMatch(/^\d+\.\d+\.\d+$/);
    // Nothing a service runs may need a dev tool: no workspace package lists one as a dependency.
    for (const dir of ["packages", "services"]) {
      for (const name of readdirSync(join(root, dir))) {
        const file = join(root, dir, name, "package.json");
        if (!existsSync(file)) continue;
        const dependencies = Object.keys(
          (JSON.parse(readFileSync(file, "utf8")).dependencies ?? {}) as object,
        );
        for (const tool of [
          "solc",
          "@foundry-rs/anvil",
          "vitest",
          "typescript",
          "@biomejs/biome",
          "tsx",
          "esbuild",
        ]) {
          expect(dependencies, `${dir}/${name}`).not.toContain(tool);
        }
      }
    }
  });

  it("builds in a stage of its own and ships its bundles only: no sources, tests, e2e, bench or scripts", () => {
    const build = dockerfile.slice(dockerfile.indexOf("AS build"), dockerfile.indexOf("AS output"));
    expect(build).toMatch(/^RUN pnpm build$/m);
    const output = dockerfile.slice(dockerfile.indexOf("AS output"), dockerfile.indexOf("AS prod-deps"));
    expect(output).toContain(
      "cp --parents services/*/dist/main.js packages/service-kit/dist/*.js packages/contracts/dist/deploy.js /output/",
    );
    // The images take the production dependencies and the bundles; nothing from the context, no sources.
    const images = dockerfile.slice(dockerfile.indexOf("AS app"));
    const copies = [...images.matchAll(/^COPY (?:--from=(\S+) |--chmod=\S+ <<)?(\S+)/gm)].map(
      ([line]) => line,
    );
    expect(copies).toEqual([
      "COPY --from=prod-deps /app",
      "COPY --from=output /output",
      "COPY --chmod=755 <<'EOF'",
      "COPY --chmod=755 <<'EOF'",
    ]);
    // What runs: no tsx, no TypeScript file (comments aside).
    const instructions = images.replace(/^\s*#.*$/gm, "");
    expect(instructions).not.toMatch(/\btsx\b|\.ts\b/);
    // A numeric user that is not root, for both targets.
    const app = dockerfile.slice(dockerfile.indexOf("AS app"), dockerfile.indexOf("AS contracts"));
    const user = /^USER (\d+):(\d+)$/m.exec(app);
    expect(Number(user?.[1])).toBeGreaterThan(0);
    expect(Number(user?.[2])).toBeGreaterThan(0);
    expect(images.match(/^USER /gm)).toHaveLength(1);
    expect(read(".dockerignore")).toMatch(/^\*\*\/node_modules$/m);
    expect(read(".dockerignore")).toMatch(/^\*\*\/dist$/m);
  });

  it("starts a service as every other launcher starts the built code", () => {
    const script = /<<'EOF' \/usr\/local\/bin\/run-service\n([\s\S]*?)\nEOF$/m.exec(dockerfile)?.[1];
    expect(script).toBeDefined();
    // A `node` that prints its arguments instead of running anything, in a tree laid out as the image's.
    const dir = mkdtempSync(join(tmpdir(), "run-service-"));
    try {
      writeFileSync(join(dir, "node"), `#!/bin/sh\nprintf '%s\\n' "$@"\n`, { mode: 0o755 });
      for (const service of services) {
        mkdirSync(join(dir, "app", "services", service, "dist"), { recursive: true });
        writeFileSync(join(dir, "app", "services", service, "dist", "main.js"), "");
      }
      const run = (service: string) =>
        spawnSync("sh", ["-c", script as string], {
          cwd: join(dir, "app"),
          env: { PATH: `${dir}:${process.env.PATH}`, SERVICE: service },
          encoding: "utf8",
        });
      for (const service of services) {
        expect(run(service).stdout.trim().split("\n"), service).toEqual(
          serviceNodeArgs(service, [], "built"),
        );
      }
      const unknown = run("nope");
      expect(unknown.status).toBe(64);
      expect(unknown.stderr).toContain(services.join(" "));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("has a runtime target (the last stage) with EXPOSE and HEALTHCHECK, and a contracts target", () => {
    expect(stages.at(-1)?.name).toBe("runtime");
    expect(stages.map((stage) => stage.name)).toContain("contracts");
    const runtime = dockerfile.slice(dockerfile.lastIndexOf("AS runtime"));
    expect(runtime).toMatch(/^EXPOSE 8080 9464 9465$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*CMD \["healthcheck"\]$/m);
    const contracts = dockerfile.slice(
      dockerfile.indexOf("AS contracts"),
      dockerfile.lastIndexOf("FROM app AS runtime"),
    );
    expect(contracts).toMatch(/^ENTRYPOINT \["node", "packages\/contracts\/dist\/deploy\.js"\]$/m);
    expect(contracts).toContain("--keep-existing");
  });
});

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests, checked by the schemas below
  spec?: any;
  data?: Record<string, string>;
}

// ── kustomize ────────────────────────────────────────────────────────────────────────────────────────

interface Kustomization {
  namespace?: string;
  labels?: { pairs: Record<string, string> }[];
  resources?: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
  secretGenerator?: { name: string; envs?: string[] }[];
  configMapGenerator?: { name: string; files?: string[] }[];
}

/** Go's json.Marshal of a map: keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped. */
function goJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
        )
      : v;
  return JSON.stringify(sorted(value)).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Base64 as kustomize writes Secret data: from 70 characters on, in lines of 70, each ending in a newline. */
function kustomizeBase64(value: string): string {
  const encoded = Buffer.from(value).toString("base64");
  if (encoded.length < 70) return encoded;
  return encoded.replace(/.{1,70}/g, (line) => `${line}\n`);
}

/**
 * kustomize's name suffix of a generated object: sha256 of its JSON, 10 hex digits, some letters swapped.
 * kustomize 5 looks the name up under the key "metadata/name", which finds nothing: the name hashes as "".
 */
function nameSuffix(object: Record<string, unknown>): string {
  const hex = createHash("sha256").update(goJson(object)).digest("hex");
  const swap: Record<string, string> = { "0": "g", "1": "h", "3": "k", a: "m", e: "t" };
  return [...hex.slice(0, 10)].map((c) => swap[c] ?? c).join("");
}

/**
 * `kubectl kustomize` for what deploy/k8s uses (resources, namespace, labels, images, env-file Secrets and
 * file ConfigMaps with their hash suffix and the references to them), for machines without kubectl;
 * where kubectl is installed the test checks that both render the same objects.
 */
function renderKustomization(dir: string): K8sObject[] {
  const k = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as Kustomization;
  const objects: K8sObject[] = (k.resources ?? []).flatMap((file) =>
    parseAllDocuments(readFileSync(join(dir, file), "utf8")).map((doc) => doc.toJS() as K8sObject),
  );
  const renamed = new Map<string, string>();
  for (const generator of k.secretGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const file of generator.envs ?? []) {
      for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
        const trimmed = line.trim();
        if (trimmed === "" || trimmed.startsWith("#")) continue;
        const at = trimmed.indexOf("=");
        data[trimmed.slice(0, at)] = kustomizeBase64(trimmed.slice(at + 1));
      }
    }
    const name = `${generator.name}-${nameSuffix({ kind: "Secret", type: "Opaque", name: "", data })}`;
    renamed.set(`Secret/${generator.name}`, name);
    objects.push({ apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name }, data } as K8sObject);
  }
  for (const generator of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const entry of generator.files ?? []) {
      const [key, file] = entry.includes("=") ? entry.split("=") : [entry.split("/").at(-1), entry];
      data[key as string] = readFileSync(join(dir, file as string), "utf8");
    }
    const name = `${generator.name}-${nameSuffix({ kind: "ConfigMap", name: "", data })}`;
    renamed.set(`ConfigMap/${generator.name}`, name);
    objects.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data });
  }
  const labels = Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs)) as Record<string, string>;
  for (const object of objects) {
    if (k.namespace && object.kind !== "Namespace") object.metadata.namespace = k.namespace;
    object.metadata.labels = { ...object.metadata.labels, ...labels };
    const pod = object.kind === "Deployment" || object.kind === "Job" ? object.spec.template.spec : undefined;
    if (!pod) continue;
    for (const container of pod.containers) {
      const [image] = container.image.split(":");
      const rule = k.images?.find((i) => i.name === image);
      if (rule) container.image = `${rule.newName ?? image}${rule.newTag ? `:${rule.newTag}` : ""}`;
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef)
          source.configMapRef.name =
            renamed.get(`ConfigMap/${source.configMapRef.name}`) ?? source.configMapRef.name;
        if (source.secretRef)
          source.secretRef.name = renamed.get(`Secret/${source.secretRef.name}`) ?? source.secretRef.name;
      }
    }
    for (const volume of pod.volumes ?? []) {
      if (volume.configMap)
        volume.configMap.name = renamed.get(`ConfigMap/${volume.configMap.name}`) ?? volume.configMap.name;
      if (volume.secret)
        volume.secret.secretName =
          renamed.get(`Secret/${volume.secret.secretName}`) ?? volume.secret.secretName;
    }
  }
  return objects;
}

/** kubectl on PATH, or undefined. */
function kubectl(): string | undefined {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
    return "kubectl";
  } catch {
    return undefined;
  }
}

// ── Kubernetes ───────────────────────────────────────────────────────────────────────────────────────

const models: Record<string, new (data: never) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "batch/v1/Job": Job,
};

describe("deploy/k8s", () => {
  let dir: string;
  let objects: K8sObject[];
  let jobObjects: K8sObject[];
  const kustomize = (path: string) =>
    kubectl()
      ? parseAllDocuments(execFileSync("kubectl", ["kustomize", path], { encoding: "utf8" })).map(
          (doc) => doc.toJS() as K8sObject,
        )
      : renderKustomization(path);

  beforeAll(() => {
    // The git-ignored inputs of the generators, as a user makes them: copies of the committed examples.
    dir = mkdtempSync(join(tmpdir(), "fundraise-k8s-"));
    cpSync(join(root, "deploy", "k8s"), dir, { recursive: true });
    for (const example of ["connections.env", "deployment.json", "contracts/deployer.env"]) {
      expect(existsSync(join(dir, example)), `${example} is git-ignored, not committed`).toBe(false);
      cpSync(join(dir, `${example}.example`), join(dir, example));
    }
    objects = kustomize(dir);
    jobObjects = kustomize(join(dir, "contracts"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const deployments = () => objects.filter((o) => o.kind === "Deployment");
  const container = (o: K8sObject) => o.spec.template.spec.containers[0];
  const envOf = (o: K8sObject) =>
    Object.fromEntries(
      (container(o).env ?? []).map((e: { name: string; value: string }) => [e.name, e.value]),
    );

  it("renders objects that are valid against the Kubernetes schemas", () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const rendered of [...objects, ...jobObjects]) {
      const object = structuredClone(rendered);
      const Model = models[`${object.apiVersion}/${object.kind}`];
      // kustomize folds long base64 values over lines, which the API server's decoder skips and the
      // schema's "byte" format does not.
      if (object.kind === "Secret") {
        object.data = Object.fromEntries(
          Object.entries(object.data ?? {}).map(([k, v]) => [k, v.replace(/\s/g, "")]),
        );
      }
      expect(Model, `a schema for ${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(
        () => new (Model as NonNullable<typeof Model>)(object as never).validate(),
        `${object.kind}/${object.metadata.name}`,
      ).not.toThrow();
      if (object.kind !== "Namespace") expect(object.metadata.namespace).toBe("fundraise");
    }
  });

  it.runIf(kubectl())("renders as the built-in renderer does (the fallback where kubectl is missing)", () => {
    const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
    const byKey = (list: K8sObject[]) => new Map(list.map((o) => [key(o), o]));
    for (const [path, rendered] of [
      [dir, objects],
      [join(dir, "contracts"), jobObjects],
    ] as const) {
      const own = byKey(renderKustomization(path));
      expect([...own.keys()].sort()).toEqual(rendered.map(key).sort());
      for (const object of rendered) expect(own.get(key(object)), key(object)).toEqual(object);
    }
  });

  it("has a Deployment for every service, chain-indexer included, with one active indexer", () => {
    expect(
      deployments()
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(services);
    for (const deployment of deployments()) expect(envOf(deployment).SERVICE).toBe(deployment.metadata.name);
    expect(deployments().find((d) => d.metadata.name === "chain-indexer")?.spec.replicas).toBe(1);
  });

  it("runs a pinned image that a local cluster can load", () => {
    for (const deployment of deployments()) {
      expect(container(deployment).image, deployment.metadata.name).toMatch(
        /^fundraise\/backend:\d+\.\d+\.\d+$/,
      );
      expect(container(deployment).imagePullPolicy).toBe("IfNotPresent");
    }
    const job = jobObjects.find((o) => o.kind === "Job") as K8sObject;
    expect(container(job).image).toMatch(/^fundraise\/contracts-deploy:\d+\.\d+\.\d+$/);
    expect(container(job).imagePullPolicy).toBe("IfNotPresent");
  });

  it("probes every Deployment: the gateway on its port, the others on the internal health port", () => {
    for (const deployment of deployments()) {
      const name = deployment.metadata.name;
      const c = container(deployment);
      const port = (c.ports as { name: string; containerPort: number }[]).find(
        (p) => p.name === c.livenessProbe.httpGet.port,
      )?.containerPort;
      expect(port, name).toBe(name === "gateway" ? 8080 : 9465);
      expect(c.startupProbe.httpGet.path, name).toBe("/healthz");
      expect(c.livenessProbe.httpGet.path, name).toBe("/healthz");
      expect(c.readinessProbe.httpGet.path, name).toBe("/readyz");
      if (name !== "gateway") {
        expect(envOf(deployment).HEALTH_PORT).toBe("9465");
        expect(envOf(deployment).HEALTH_HOST).toBe("0.0.0.0");
      }
    }
  });

  it("sets minReadySeconds, no service-account token, a grace period for the ordered shutdown, a preStop on the gateway", () => {
    for (const deployment of deployments()) {
      const pod = deployment.spec.template.spec;
      expect(deployment.spec.minReadySeconds, deployment.metadata.name).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken, deployment.metadata.name).toBe(false);
      expect(pod.terminationGracePeriodSeconds, deployment.metadata.name).toBeGreaterThanOrEqual(65);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
    }
    const gateway = deployments().find((d) => d.metadata.name === "gateway") as K8sObject;
    expect(container(gateway).lifecycle.preStop.exec.command).toEqual(["sleep", "5"]);
    const job = jobObjects.find((o) => o.kind === "Job") as K8sObject;
    expect(job.spec.template.spec.automountServiceAccountToken).toBe(false);
  });

  it("has a PodDisruptionBudget for every Deployment", () => {
    const budgets = objects.filter((o) => o.kind === "PodDisruptionBudget");
    for (const deployment of deployments()) {
      const labels = deployment.spec.template.metadata.labels as Record<string, string>;
      const budget = budgets.find((b) =>
        Object.entries(b.spec.selector.matchLabels as Record<string, string>).every(
          ([k, v]) => labels[k] === v,
        ),
      );
      expect(budget, deployment.metadata.name).toBeDefined();
    }
  });

  it("states the production settings explicitly, under names the services declare", () => {
    const config =
      objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "fundraise-env")?.data ?? {};
    for (const name of Object.keys(config)) expect(isDeclared(name), name).toBe(true);
    expect(config.PUBLIC_BASE_URL).toMatch(/^https:\/\//);
    expect(config.PUBLIC_APP_URL).toMatch(/^https:\/\//);
    expect(config.CORS_ORIGINS).toMatch(/^https:\/\//);
    expect(config.SIWE_DOMAIN).toMatch(/^[a-z0-9.-]+$/);
    expect(config.LEGACY_MESSAGES).toBe("false");
    expect(config.MAIL_FROM).not.toMatch(/localhost/);
  });

  it("generates the Secret and the deployment ConfigMap from git-ignored files, and mounts them", () => {
    const secret = objects.find((o) => o.kind === "Secret") as K8sObject;
    expect(secret.metadata.name).toMatch(/^fundraise-connections-[a-z0-9]{10}$/);
    for (const name of Object.keys(secret.data ?? {})) expect(isDeclared(name), name).toBe(true);
    const deploymentFile = objects.find(
      (o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("fundraise-deployment-"),
    );
    expect(Object.keys(deploymentFile?.data ?? {})).toEqual(["local.json"]);
    const ignored = read(".gitignore");
    for (const file of [
      "deploy/k8s/connections.env",
      "deploy/k8s/deployment.json",
      "deploy/k8s/contracts/deployer.env",
    ]) {
      expect(ignored.split("\n")).toContain(file);
    }
    for (const deployment of deployments()) {
      const refs = container(deployment).envFrom.map(
        (e: { secretRef?: { name: string } }) => e.secretRef?.name,
      );
      expect(refs).toContain(secret.metadata.name);
    }
    for (const name of chainAware) {
      const volumes = deployments().find((d) => d.metadata.name === name)?.spec.template.spec.volumes;
      expect(volumes.map((v: { configMap?: { name: string } }) => v.configMap?.name)).toContain(
        deploymentFile?.metadata.name,
      );
      expect(
        envOf(deployments().find((d) => d.metadata.name === name) as K8sObject).CHAIN_DEPLOYMENT_FILE,
      ).toBe("/deployment/local.json");
    }
  });

  it("has a Job that deploys the contracts once, with its own Secret", () => {
    const job = jobObjects.find((o) => o.kind === "Job") as K8sObject;
    expect(job.spec.backoffLimit).toBe(0);
    expect(job.spec.template.spec.restartPolicy).toBe("Never");
    const secret = jobObjects.find((o) => o.kind === "Secret") as K8sObject;
    expect(secret.metadata.name).toMatch(/^fundraise-deployer-[a-z0-9]{10}$/);
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(["CHAIN_RPC_URL", "DEPLOYER_PRIVATE_KEY"]);
    expect(container(job).envFrom[0].secretRef.name).toBe(secret.metadata.name);
  });
});

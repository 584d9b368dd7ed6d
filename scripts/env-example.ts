/**
 * Writes `.env.example` from the env schemas the services really load, so the list cannot drift from the
 * code. `pnpm exec tsx scripts/env-example.ts` writes it; `--check` exits 1 when the committed file is stale.
 *
 * A service is any `services/<name>/src/config.ts`; every export of it whose name ends in `Env` is part of
 * its schema. A variable several services read is listed once, in the shared section, with its readers.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describeEnv } from "@fundraise/service-kit";

type Properties = Parameters<typeof describeEnv>[0];

interface Variable {
  name: string;
  default: unknown;
  description: string;
  choices: string[];
  readBy: string[];
}

/**
 * Variables of services that have not landed yet. Shown commented out;
 * each leaves this list by itself once a service schema declares it.
 */
const PLANNED: { name: string; example: string; description: string; readBy: string[] }[] = [
  {
    name: "CHAIN_RPC_URL",
    example: "http://127.0.0.1:8545",
    description: "EVM JSON-RPC endpoint; unset: `pnpm start` starts anvil and deploys the contracts",
    readBy: ["auth", "chain-indexer"],
  },
  {
    name: "IPFS_API_URL",
    example: "http://127.0.0.1:5001",
    description: "Kubo RPC API; unset: `pnpm start` starts a local Kubo-RPC-compatible node",
    readBy: ["storage"],
  },
  {
    name: "SMTP_URL",
    example: "smtp://127.0.0.1:1025",
    description: "mail server (smtp://host:port); unset: mail is logged",
    readBy: ["auth"],
  },
  {
    name: "PUBLIC_BASE_URL",
    example: "http://localhost:8080",
    description: "where the gateway is reached from outside (mail links)",
    readBy: ["auth", "gateway"],
  },
  {
    name: "PUBLIC_APP_URL",
    example: "https://app.example.com",
    description: "the web client's home page (verify-email redirect); PUBLIC_BASE_URL when unset",
    readBy: ["auth", "gateway"],
  },
];

/**
 * Variables `pnpm start` sets itself when they are unset: a local chain (anvil, state in .local/chain) with
 * the contracts deployed and its deployment file, and the local IPFS stand-in. Written commented out, so a
 * copied .env.example gives the same system as no .env at all: set, they would point the services at a
 * chain or IPFS node and deployment file that `pnpm start` does not manage (scripts/start.ts).
 */
const LOCAL_ONLY = new Set(["CHAIN_RPC_URL", "CHAIN_DEPLOYMENT_FILE", "IPFS_API_URL"]);
const LOCAL_ONLY_NOTE = "commented out: `pnpm start` provides it while unset";

const root = join(import.meta.dirname, "..");
const target = join(root, ".env.example");
const WRITE_COMMAND = "pnpm exec tsx scripts/env-example.ts";

function isProperties(value: unknown): value is Properties {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((schema) => typeof schema === "object" && schema !== null)
  );
}

/** Each service's schema, keyed by service name, in name order so the output is stable. */
async function loadSchemas(): Promise<Map<string, Properties>> {
  const servicesDir = join(root, "services");
  const services = readdirSync(servicesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(servicesDir, entry.name, "src", "config.ts")))
    .map((entry) => entry.name)
    .sort();
  const schemas = new Map<string, Properties>();
  for (const service of services) {
    const file = join(servicesDir, service, "src", "config.ts");
    const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const properties: Properties = {};
    for (const [exportName, value] of Object.entries(module)) {
      if (exportName.endsWith("Env") && isProperties(value)) Object.assign(properties, value);
    }
    if (Object.keys(properties).length === 0) {
      throw new Error(`services/${service}/src/config.ts exports no schema named *Env`);
    }
    schemas.set(service, properties);
  }
  return schemas;
}

/** Allowed values of a union of literals (LOG_LEVEL), which a reader of the file cannot guess. */
function choicesOf(schema: unknown): string[] {
  const anyOf = (schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (!anyOf?.every((member) => member.const !== undefined)) return [];
  return anyOf.map((member) => String(member.const));
}

/**
 * Merges the schemas into one variable list. The same name must mean the same thing everywhere, so a
 * variable declared with different defaults or descriptions fails the run instead of being listed twice.
 */
function collect(schemas: Map<string, Properties>): Variable[] {
  const variables = new Map<string, Variable>();
  const conflicts: string[] = [];
  for (const [service, properties] of schemas) {
    for (const entry of describeEnv(properties)) {
      const known = variables.get(entry.name);
      if (!known) {
        variables.set(entry.name, {
          ...entry,
          choices: choicesOf(properties[entry.name]),
          readBy: [service],
        });
        continue;
      }
      if (
        JSON.stringify(known.default) !== JSON.stringify(entry.default) ||
        known.description !== entry.description
      ) {
        conflicts.push(`${entry.name}: ${known.readBy.join(", ")} and ${service} declare it differently`);
      }
      known.readBy.push(service);
    }
  }
  if (conflicts.length > 0) {
    throw new Error(`One name must mean one thing across services:\n  - ${conflicts.join("\n  - ")}`);
  }
  return [...variables.values()];
}

/** A dotenv value: bare when it is safe, otherwise double-quoted with escapes. */
function formatValue(value: unknown): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return /^[\w.:/@+*,%?&=-]*$/.test(text) ? text : JSON.stringify(text);
}

function describe(variable: Variable): string {
  const parts = [variable.description || "(no description)"];
  if (variable.choices.length > 0) parts.push(`one of: ${variable.choices.join(", ")}`);
  if (variable.default === undefined) parts.push("required, no default");
  if (LOCAL_ONLY.has(variable.name)) parts.push(LOCAL_ONLY_NOTE);
  return parts.join("; ");
}

/** The assignment line: commented out for a variable `pnpm start` provides itself. */
function assignment(variable: Variable): string {
  const line = `${variable.name}=${formatValue(variable.default)}`;
  return LOCAL_ONLY.has(variable.name) ? `# ${line}` : line;
}

function section(title: string): string[] {
  return ["", `# ── ${title} ${"─".repeat(Math.max(3, 96 - title.length))}`];
}

function render(schemas: Map<string, Properties>): string {
  const variables = collect(schemas);
  const lines = [
    "# Every variable a service reads, with its default. Generated from the services' env schemas by",
    `# \`${WRITE_COMMAND}\`: change a schema, not this file (\`--check\` fails when it is stale).`,
    "# Copy to .env for `pnpm start`; a variable already set in the environment wins over .env.",
    "# In docker compose and Kubernetes the values come from docker-compose.yml and deploy/k8s instead.",
  ];
  const shared = variables.filter((v) => v.readBy.length > 1);
  if (shared.length > 0) {
    lines.push(...section("Shared"));
    for (const v of shared) {
      lines.push(`# ${describe(v)}`, `# read by: ${v.readBy.join(", ")}`, assignment(v));
    }
  }
  for (const service of schemas.keys()) {
    const own = variables.filter((v) => v.readBy.length === 1 && v.readBy[0] === service);
    if (own.length === 0) continue;
    lines.push(...section(service));
    for (const v of own) lines.push(`# ${describe(v)}`, assignment(v));
  }
  const declared = new Set(variables.map((v) => v.name));
  const planned = PLANNED.filter((p) => !declared.has(p.name));
  if (planned.length > 0) {
    lines.push(...section("Planned: read by services that have not landed yet"));
    for (const p of planned) {
      lines.push(`# ${p.description}`, `# read by: ${p.readBy.join(", ")}`, `# ${p.name}=${p.example}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

const args = process.argv.slice(2);
const check = args.includes("--check");
const unknown = args.filter((a) => a !== "--check");
if (unknown.length > 0) {
  process.stderr.write(`unknown argument(s): ${unknown.join(" ")}\nusage: ${WRITE_COMMAND} [--check]\n`);
  process.exit(2);
}

let expected: string;
try {
  expected = render(await loadSchemas());
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
const current = existsSync(target) ? readFileSync(target, "utf8") : null;

if (check) {
  if (current === expected) {
    process.stdout.write(".env.example is up to date\n");
  } else {
    const have = new Set((current ?? "").split("\n"));
    const want = new Set(expected.split("\n"));
    const changes = [
      ...[...want].filter((l) => l !== "" && !have.has(l)).map((l) => `  + ${l}`),
      ...[...have].filter((l) => l !== "" && !want.has(l)).map((l) => `  - ${l}`),
    ];
    const shown = current === null ? [] : changes.slice(0, 20);
    if (changes.length > shown.length && shown.length > 0) shown.push(`  … ${changes.length - 20} more`);
    process.stderr.write(
      [
        current === null ? ".env.example is missing" : ".env.example is stale",
        ...shown,
        `run \`${WRITE_COMMAND}\` and commit the result`,
        "",
      ].join("\n"),
    );
    process.exitCode = 1;
  }
} else if (current === expected) {
  process.stdout.write(".env.example is already up to date\n");
} else {
  writeFileSync(target, expected);
  process.stdout.write("wrote .env.example\n");
}

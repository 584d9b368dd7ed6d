/**
 * The `observability` profile of docker-compose.yml and the scrape annotations of deploy/k8s, held to the
 * services: Prometheus scrapes every service on the port it serves /metrics on, and every metric the
 * provisioned Grafana dashboard queries is in the /metrics text the services' own code produces (the
 * process registry of service-kit, the gateway's HTTP histogram, the indexer's progress), so neither the
 * scrape list nor the dashboard can drift from the code.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createProcessMetrics } from "@fundraise/service-kit";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { createProgress } from "../services/chain-indexer/src/ops/progress.ts";
import { createMetrics } from "../services/gateway/src/plugins/metrics.ts";

const root = join(import.meta.dirname, "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const services = readdirSync(join(root, "services"))
  .filter((name) => existsSync(join(root, "services", name, "src", "main.ts")))
  .sort();

interface ComposeService {
  image?: string;
  profiles?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  configs?: { source: string; target: string }[];
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as {
  services: Record<string, ComposeService>;
  configs: Record<string, { file: string }>;
};

/** The port a service serves /metrics on: the gateway its METRICS_PORT, the others HEALTH_PORT. */
function metricsPortOf(name: string): number {
  if (name === "gateway") {
    const fromConfig = /METRICS_PORT: Type\.Integer\(\{[^}]*default: (\d+)/s.exec(
      read("services/gateway/src/config.ts"),
    )?.[1];
    return Number(fromConfig);
  }
  return Number(compose.services[name]?.environment?.HEALTH_PORT);
}

interface ScrapeConfig {
  job_name: string;
  metrics_path?: string;
  dns_sd_configs?: { names: string[]; type: string; port: number }[];
  static_configs?: { targets: string[] }[];
}
const prometheus = parse(read("deploy/observability/prometheus.yml")) as { scrape_configs: ScrapeConfig[] };

const observability = ["jaeger", "prometheus", "grafana"];
const configFile = (service: string, target: string) => {
  const source = compose.services[service]?.configs?.find((c) => c.target === target)?.source;
  return source ? compose.configs[source]?.file.replace(/^\.\//, "") : undefined;
};

describe("docker compose --profile observability", () => {
  it("adds Jaeger (OTLP/HTTP 4318), Prometheus and Grafana, on pinned images, loopback only, off by default", () => {
    for (const name of observability) {
      const service = compose.services[name] as ComposeService;
      expect(service, name).toBeDefined();
      expect(service.profiles, name).toEqual(["observability"]);
      expect(service.image, name).toMatch(/^[^:]+:(?!latest$)[\w.-]+$/);
      for (const port of service.ports ?? [])
        expect(port, name).toMatch(/^127\.0\.0\.1:\$\{[A-Z_]+:-\d+\}:\d+$/);
    }
    expect(compose.services.jaeger?.ports?.some((port) => port.endsWith(":4318"))).toBe(true);
    for (const name of services) expect(compose.services[name]?.profiles, name).toBeUndefined();
    expect(configFile("prometheus", "/etc/prometheus/prometheus.yml")).toBe(
      "deploy/observability/prometheus.yml",
    );
  });

  it("has Prometheus scrape every service, each replica, on the port it serves /metrics on", () => {
    for (const name of services) {
      const job = prometheus.scrape_configs.find((c) => c.job_name === name);
      expect(job, `a scrape job for ${name}`).toBeDefined();
      expect(job?.metrics_path ?? "/metrics").toBe("/metrics");
      // Docker's DNS answers the service's name with every container of it: `--scale` adds targets.
      expect(job?.dns_sd_configs).toEqual([expect.objectContaining({ names: [name], type: "A" })]);
      expect(job?.dns_sd_configs?.[0]?.port, name).toBe(metricsPortOf(name));
    }
    for (const job of prometheus.scrape_configs) {
      for (const target of job.dns_sd_configs?.flatMap((c) => c.names) ?? []) {
        expect(compose.services, `${job.job_name} → ${target}`).toHaveProperty(target);
      }
    }
  });

  it("provisions Grafana with the Prometheus data source and the dashboard", () => {
    const datasources = configFile("grafana", "/etc/grafana/provisioning/datasources/datasources.yml");
    const parsed = parse(read(datasources as string)) as { datasources: { uid: string; url: string }[] };
    expect(parsed.datasources).toEqual(
      expect.arrayContaining([expect.objectContaining({ uid: "prometheus", url: "http://prometheus:9090" })]),
    );
    const provider = parse(
      read(configFile("grafana", "/etc/grafana/provisioning/dashboards/dashboards.yml") as string),
    ) as { providers: { options: { path: string } }[] };
    const folder = provider.providers[0]?.options.path;
    expect(configFile("grafana", `${folder}/services.json`)).toBe(
      "deploy/observability/grafana/dashboards/services.json",
    );
  });
});

// ── the dashboard against the code ──────────────────────────────────────────────────────────────────

interface Panel {
  title: string;
  datasource?: { uid: string };
  targets: { expr: string; datasource?: { uid: string } }[];
}
const dashboard = JSON.parse(read("deploy/observability/grafana/dashboards/services.json")) as {
  panels: Panel[];
};

const PROMQL_WORDS = new Set(["and", "or", "unless", "offset", "bool", "inf", "nan"]);

/** The metric names a PromQL expression selects (functions, label lists and matchers left out). */
function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/"[^"]*"/g, " ");
  return [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)]
    .filter((match) => match[2] === undefined && !PROMQL_WORDS.has((match[1] as string).toLowerCase()))
    .map((match) => match[1] as string);
}

/** Sample names in Prometheus text (`name{…} v` or `name v`), HELP/TYPE lines left out. */
function sampleNames(text: string): Set<string> {
  return new Set(
    text
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ""),
  );
}

/**
 * /metrics as the services' code writes it, every source answering: service-kit's process registry (every
 * service's), with the gateway's HTTP histogram on it (the gateway's) and the indexer's own lines.
 */
async function servicesMetricsText(): Promise<string> {
  const metrics = createProcessMetrics();
  metrics.bus.rpcClient?.("users.user.count", "ok", 0.002);
  metrics.bus.rpcServer?.("users.user.count", "ok", 0.001);
  metrics.dbError("connection");
  metrics.observeRedis({ on: (_event, listener) => listener(new Error("refused")) });
  createMetrics(metrics.registry).requestDuration.observe(
    { method: "GET", route: "/user/learnusercount", status: 200 },
    0.003,
  );
  const progress = createProgress({
    chainId: 31337,
    startBlock: 0,
    confirmations: 0,
    maxLagBlocks: 5,
    intervalMs: 1_000,
  });
  progress.sawHead(10);
  progress.indexed(9, 1);
  const stat = (queue: string) => ({ queue, messages: 0, consumers: 1 });
  metrics.setSources({
    service: "chain-indexer",
    connected: () => true,
    queues: async () => ({
      queues: [stat("chain.rpc"), stat("users.chain.user-status.changed")],
      deadLetters: [stat("users.chain.user-status.changed.dlq")],
    }),
    outbox: async () => ({ schema: "chain", events: 0, oldestAgeSeconds: 0 }),
    text: () => progress.metrics(),
  });
  return metrics.scrape();
}

describe("the provisioned dashboard", () => {
  it("queries only metrics that the services' /metrics serve", async () => {
    const served = sampleNames(await servicesMetricsText());
    const queried = dashboard.panels.flatMap((panel) => panel.targets.flatMap((t) => metricNamesOf(t.expr)));
    expect(queried.length).toBeGreaterThan(10);
    expect([...new Set(queried)].filter((name) => !served.has(name))).toEqual([]);
  });

  it("shows what the metrics are for: RPC by route and outcome, queues, dead letters, outbox, indexer, errors", () => {
    const queried = new Set(
      dashboard.panels.flatMap((panel) => panel.targets.flatMap((t) => metricNamesOf(t.expr))),
    );
    for (const name of [
      "rpc_client_duration_seconds_bucket",
      "rpc_server_duration_seconds_bucket",
      "rpc_server_duration_seconds_count",
      "bus_queue_messages",
      "bus_queue_consumers",
      "bus_dead_letter_messages",
      "outbox_backlog_events",
      "outbox_oldest_age_seconds",
      "chain_indexer_indexed_block",
      "chain_indexer_head_block",
      "db_errors_total",
      "redis_errors_total",
    ]) {
      expect(queried, name).toContain(name);
    }
    for (const panel of dashboard.panels) expect(panel.datasource?.uid, panel.title).toBe("prometheus");
  });

  it("reads metric names out of PromQL, not functions or labels", () => {
    expect(
      metricNamesOf('histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{outcome!="ok"}[5m]))) / b'),
    ).toEqual(["a_bucket", "b"]);
  });
});

// ── Kubernetes ───────────────────────────────────────────────────────────────────────────────────────

describe("deploy/k8s scrape annotations", () => {
  it("annotate every service's pod template with scrape, the port of its /metrics, and the path", () => {
    for (const name of services) {
      const deployment = parseAllDocuments(read(`deploy/k8s/${name}.yaml`))
        .map((doc) => doc.toJS())
        .find((object) => object?.kind === "Deployment");
      const template = deployment?.spec.template;
      const annotations = template?.metadata.annotations ?? {};
      expect(annotations["prometheus.io/scrape"], name).toBe("true");
      expect(annotations["prometheus.io/path"], name).toBe("/metrics");
      expect(Number(annotations["prometheus.io/port"]), name).toBe(metricsPortOf(name));
      const ports = template.spec.containers.flatMap(
        (c: { ports?: { containerPort: number }[] }) => c.ports ?? [],
      );
      expect(
        ports.map((p: { containerPort: number }) => p.containerPort),
        name,
      ).toContain(metricsPortOf(name));
    }
  });
});

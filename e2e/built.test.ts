import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, serviceEntry } from "../scripts/lib/processes.ts";
import { ALL_SERVICES, type System, startSystem } from "./system.ts";

// `pnpm build` as the image's build stage runs it, then every service from its output (node on
// services/<name>/dist/main.js, no tsx) on this run's own database, vhost, Redis prefix, anvil and IPFS
// stand-in: a bundle that drifted from the sources, or imports a package its service does not list, fails
// here.
const root = join(import.meta.dirname, "..");
let system: System;
const healthPorts: Record<string, number> = {};

beforeAll(async () => {
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: root, stdio: "pipe" });
  for (const name of ALL_SERVICES) if (name !== "gateway") healthPorts[name] = await freePort();
  system = await startSystem({
    code: "built",
    serviceEnv: Object.fromEntries(
      Object.entries(healthPorts).map(([name, port]) => [name, { HEALTH_PORT: String(port) }]),
    ),
  });
});

afterAll(async () => {
  await system?.stop();
});

describe("the built output", () => {
  it("has a bundle for every service", () => {
    for (const name of ALL_SERVICES)
      expect(existsSync(join(root, serviceEntry(name, "built"))), name).toBe(true);
  });

  it("starts every service, each ready on its /readyz", async () => {
    const urls = {
      gateway: `${system.gatewayUrl}/readyz`,
      ...Object.fromEntries(
        Object.entries(healthPorts).map(([name, port]) => [name, `http://127.0.0.1:${port}/readyz`]),
      ),
    };
    expect(Object.keys(urls).sort()).toEqual([...ALL_SERVICES].sort());
    for (const [name, url] of Object.entries(urls)) {
      const res = await fetch(url);
      expect(res.status, `${name}: ${await res.clone().text()}`).toBe(200);
    }
  });

  it("serves requests end to end through the gateway", async () => {
    const res = await fetch(`${system.gatewayUrl}/user/learnusercount`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ success: true });
  });

  it("runs the bundles, not the sources", () => {
    // Every service process this system started: its command line names dist/main.js and no loader.
    for (const [name, pid] of Object.entries(system.pids)) {
      const args = execFileSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8" }).trim();
      expect(args, name).toContain(serviceEntry(name, "built"));
      expect(args, name).not.toContain("tsx");
    }
  });
});

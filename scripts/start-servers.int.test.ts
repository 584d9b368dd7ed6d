import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { redactUrl } from "@fundraise/bus";
import { describe, expect, it } from "vitest";

// `pnpm start` with a server missing: one line per server that does not answer, naming its URL (no
// password) and how to get it, and a non-zero exit before any service starts. Ports 1 refuse at once.
// With a bad LOG_FORMAT it stops earlier still. Each case starts the command (tsx): an integration file.
const root = join(import.meta.dirname, "..");

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
  const began = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  child.stdout.resume();
  return new Promise((resolve) =>
    child.once("exit", (code) => resolve({ code, stderr, ms: performance.now() - began })),
  );
}

describe("pnpm start without its servers", () => {
  it("names each server that does not answer, in one line, and exits 1 within 10 s", async () => {
    // What the command takes to load (tsx, its imports) is the machine's: a run that stops at its first
    // check (a bad LOG_FORMAT) measures it here and now, so the 10 s are the server checks' own.
    const loading = (await start({ LOG_FORMAT: "xml" })).ms;
    const { code, stderr, ms } = await start({
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/fundraising",
      REDIS_URL: "redis://127.0.0.1:1",
      AMQP_URL: "amqp://guest:secret@127.0.0.1:1",
    });
    expect(code).toBe(1);
    expect(ms - loading, `${ms.toFixed(0)} ms, of which loading ${loading.toFixed(0)} ms`).toBeLessThan(
      10_000,
    );
    const lines = stderr.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^PostgreSQL does not answer at postgres:\/\/postgres@127\.0\.0\.1:1\/fundraising: /,
    );
    expect(lines[1]).toMatch(/^Redis does not answer at redis:\/\/127\.0\.0\.1:1: /);
    expect(lines[2]).toMatch(/^RabbitMQ does not answer at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1: /);
    for (const line of lines) expect(line).toContain("scripts/infra-up.sh");
    expect(stderr).not.toContain("secret");
  }, 60_000);

  it("one missing server is the one line", async () => {
    const { code, stderr } = await start({ REDIS_URL: "redis://127.0.0.1:1" });
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([expect.stringMatching(/^Redis does not answer at /)]);
  }, 30_000);

  it("prints no password (the bus's redaction, as its logs)", () => {
    expect(redactUrl("amqp://guest:guest@127.0.0.1:5672")).toBe("amqp://guest:***@127.0.0.1:5672");
    expect(redactUrl("not a url")).toBe("<unparseable url>");
  });
});

describe("pnpm start with a bad LOG_FORMAT", () => {
  it("stops before starting anything, saying why", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      cwd: root,
      env: { ...process.env, LOG_FORMAT: "xml" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/LOG_FORMAT must be json or pretty/);
    expect(run.stdout).toBe("");
    // tsx starting one process: 1–3 s on a quiet machine, over 5 s (the default) on a loaded one.
  }, 40_000);
});

import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The IPFS stand-in in a process of its own (`packages/ipfs-node/src/main.ts`): in this process, its
 * import would share one thread with the client's 20 MB of hex, which neither a direct add nor a
 * production Kubo has to.
 */
export async function startIpfsProcess() {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-ipfs-"));
  // SERVICE_NODE_FLAGS (e2e/system.ts) reach the stand-in too, so one `--cpu-prof` profiles the whole path.
  const flags = (process.env.SERVICE_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...flags, "--import", "tsx", "packages/ipfs-node/src/main.ts"], {
    cwd: join(import.meta.dirname, "..", ".."),
    env: { ...process.env, IPFS_NODE_DIR: dataDir, IPFS_NODE_PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /IPFS_API_URL=(\S+)/.exec(out);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`the IPFS stand-in exited (${code}): ${out}`)));
  });
  return {
    url,
    pid: child.pid as number,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The process this one spawned for a service (`node --import tsx services/<name>/src/main.ts`). */
export function servicePid(name: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (ppid === process.pid && cmdline.includes(`services/${name}/src/main.ts`)) return Number(entry);
    } catch {
      // The process ended while read.
    }
  }
  throw new Error(`no ${name} process under this one`);
}

/** VmRSS and VmHWM of a process, in bytes. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kb("VmRSS") * 1024, hwm: kb("VmHWM") * 1024 };
}

/** Resets VmHWM to the current RSS (Linux clear_refs 5); false when not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

const keepAlive = new http.Agent({ keepAlive: true });
/** Closes the kept-alive connections of `postBuffer`. */
export const closeConnections = () => keepAlive.destroy();

/** POST of a body already encoded, over node:http (no fetch streams or copies of 20 MB of hex). */
export function postBuffer(url: string, body: Buffer, token: string) {
  return new Promise<{ status: number; body: { data: unknown; message: string | null } }>(
    (resolve, reject) => {
      const req = http.request(
        url,
        {
          method: "POST",
          agent: keepAlive,
          headers: {
            "content-type": "application/json",
            "content-length": body.length,
            authorization: `Bearer ${token}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) });
            } catch (error) {
              reject(error);
            }
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
}

/**
 * `pnpm chaos [-- --duration 300 --faults 30 --workers 6]`: the system with replicas under scheduled
 * faults (lib/chaos.ts), on a RabbitMQ node, a Redis server and a database of its own; prints what was
 * acknowledged, lost, doubled, answered outside the envelope, and the recovery after each fault. Exits 1
 * when a target is missed.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { formatReport, runChaos, targetsMet } from "./lib/chaos.ts";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    duration: { type: "string", default: "300" },
    faults: { type: "string", default: "30" },
    workers: { type: "string", default: "6" },
    // What the services printed (warnings and errors), to read after a run.
    output: { type: "string", default: ".local/chaos-services.log" },
  },
});
mkdirSync(dirname(values.output), { recursive: true });
const started = Date.now();
const stamp = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s`;
const report = await runChaos({
  durationS: Number(values.duration),
  faults: Number(values.faults),
  workers: Number(values.workers),
  outputFile: values.output,
  log: (line) => process.stdout.write(`${stamp()}  ${line}\n`),
});
process.stdout.write(`\n${formatReport(report)}\n`);
process.exit(targetsMet(report) ? 0 : 1);

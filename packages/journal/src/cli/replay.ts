#!/usr/bin/env -S pnpm exec tsx
import type { JournalRecord } from "../records.ts";
import { replayJournal } from "../replay.ts";
import { parseCli, USAGE, UsageError } from "./args.ts";

async function main(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseCli>;
  try {
    options = parseCli(argv);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof UsageError && message === "") {
      process.stdout.write(USAGE);
      return 0;
    }
    process.stderr.write(`${message}\n\n${USAGE}`);
    return 2;
  }
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const print = (record: JournalRecord) => {
    if (options.print || record.action !== undefined) process.stdout.write(`${JSON.stringify(record)}\n`);
  };
  try {
    const summary = await replayJournal({ ...options, onRecord: print, signal: abort.signal });
    process.stderr.write(`${JSON.stringify({ summary })}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`replay failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}

process.exitCode = await main(process.argv.slice(2));

#!/usr/bin/env -S pnpm exec tsx
import { BadOptionError, ReplayError } from "../read/errors.ts";
import type { JournalRecord } from "../records.ts";
import { replayJournal } from "../replay.ts";
import { findStory } from "../story/find.ts";
import { renderStory, storyRecords } from "../story/render.ts";
import { type CliCommand, parseCli, USAGE } from "./args.ts";
import { type Io, isEntryPoint, processIo } from "./io.ts";

/** Runs the CLI; resolves with its exit code (0 done, 1 broker/journal/nothing found, 2 bad option). */
export async function main(argv: string[], io: Io): Promise<number> {
  let command: CliCommand;
  try {
    command = parseCli(argv);
  } catch (error) {
    return fail(error, io);
  }
  try {
    if (command.mode === "help") io.out(USAGE);
    else if (command.mode === "story") await story(command, io);
    else await read(command, io);
    return 0;
  } catch (error) {
    return fail(error, io);
  }
}

async function story(command: Extract<CliCommand, { mode: "story" }>, io: Io): Promise<void> {
  const found = await findStory({ ...command, onNotice: (line) => io.err(`${line}\n`) });
  if (command.json) {
    for (const record of storyRecords(found.tree, found.positions)) io.out(`${JSON.stringify(record)}\n`);
  } else {
    io.out(`${renderStory(found.tree, { of: command.traceId ? "trace" : "request" }).join("\n")}\n`);
  }
}

async function read(command: Extract<CliCommand, { mode: "read" }>, io: Io): Promise<void> {
  for (const note of command.notes) io.err(`${note}\n`);
  const print = (record: JournalRecord) => {
    if (command.print || record.action !== undefined) io.out(`${JSON.stringify(record)}\n`);
  };
  const summary = await replayJournal({
    ...command.options,
    onRecord: print,
    onWarning: (line) => io.err(`${line}\n`),
    ...(io.signal ? { signal: io.signal } : {}),
  });
  io.err(`${JSON.stringify({ summary })}\n`);
}

/** One line for the operator; the usage hint after a bad option. */
function fail(error: unknown, io: Io): number {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof BadOptionError) {
    io.err(`${message}\nSee pnpm replay -- --help\n`);
    return 2;
  }
  io.err(`${error instanceof ReplayError ? message : `replay failed: ${message}`}\n`);
  return 1;
}

// Run as a program (not imported by a test): real streams, Ctrl-C stops a --follow read.
if (isEntryPoint(import.meta.url)) {
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  process.exitCode = await main(process.argv.slice(2), processIo(abort.signal));
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
}

#!/usr/bin/env -S pnpm exec tsx
import type { ChannelModel } from "amqplib";
import { type Command, parseCommand, USAGE } from "../dlq/args.ts";
import { connect, messageOf } from "../dlq/broker.ts";
import { resolveDeadLetterQueue } from "../dlq/discover.ts";
import { InputError } from "../dlq/errors.ts";
import {
  letterBlock,
  letterJson,
  queueRowJson,
  queueTable,
  redriveLineJson,
  redriveLineText,
  type ShownLetter,
} from "../dlq/format.ts";
import { listDeadLetterQueues } from "../dlq/list.ts";
import { payloadOf, readDeadLetter } from "../dlq/message.ts";
import { peek } from "../dlq/peek.ts";
import { type RedriveOptions, redrive } from "../dlq/redrive.ts";
import { type Io, isEntryPoint, processIo } from "./io.ts";

/** `pnpm dlq …`: 0 done, 1 the broker failed or is unreachable, 2 bad input; problems as one line. */
export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  let command: Command;
  try {
    command = parseCommand(argv, io.env ?? process.env);
  } catch (error) {
    io.err(`dlq: ${oneLine(messageOf(error))}\n`);
    return error instanceof InputError ? 2 : 1;
  }
  if (command.name === "help") {
    io.out(USAGE);
    return 0;
  }
  let connection: ChannelModel | undefined;
  try {
    connection = await connect(command.url);
    await run(command, connection, io);
    return 0;
  } catch (error) {
    io.err(`dlq: ${oneLine(messageOf(error))}\n`);
    return error instanceof InputError ? 2 : 1;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

async function run(command: Exclude<Command, { name: "help" }>, connection: ChannelModel, io: Io) {
  const now = Date.now();
  switch (command.name) {
    case "list": {
      const rows = (await listDeadLetterQueues(connection, command.queues)).filter(
        (row) => !command.nonempty || (row.depth ?? 0) > 0,
      );
      if (command.json) for (const row of rows) io.out(`${queueRowJson(row, now)}\n`);
      else io.out(rows.length === 0 ? "no dead-letter queues\n" : queueTable(rows, now));
      return;
    }
    case "show": {
      const { queue, depth } = await resolveDeadLetterQueue(connection, command.queue);
      const messages = await peek(connection, queue, command.limit, depth);
      const letters: ShownLetter[] = messages.map((message) => ({
        ...readDeadLetter(message, queue),
        ...(command.payload ? { payload: payloadOf(message) } : {}),
      }));
      if (command.json) for (const letter of letters) io.out(`${letterJson(letter, now)}\n`);
      else if (letters.length === 0) io.out(`${queue}: no messages\n`);
      else io.out(letters.map((letter, i) => letterBlock(letter, i + 1, now)).join("\n"));
      return;
    }
    case "redrive": {
      const { queue } = await resolveDeadLetterQueue(connection, command.queue);
      const options: RedriveOptions = {
        queue,
        filter: command.filter,
        dryRun: command.dryRun,
        onMessage: (line) => io.out(command.json ? redriveLineJson(line) : redriveLineText(line)),
        ...(command.limit === undefined ? {} : { limit: command.limit }),
        ...crashHook(io.env ?? process.env),
      };
      const { matched, moved, returned, stalled } = await redrive(connection, options);
      io.err(`${JSON.stringify({ matched, moved, returned })}\n`);
      if (stalled) {
        io.err("dlq: stopped after 65,535 messages that stay; narrow the filter or move those first\n");
      }
      return;
    }
  }
}

/**
 * DLQ_TEST_CRASH_AFTER=<n>: the process kills itself (SIGKILL) in the middle of the transaction after the
 * n-th commit, published and acknowledged but not committed: the test of a crash mid-re-drive.
 */
function crashHook(env: NodeJS.ProcessEnv): Pick<RedriveOptions, "beforeCommit"> {
  const after = Number(env.DLQ_TEST_CRASH_AFTER);
  if (env.DLQ_TEST_CRASH_AFTER === undefined || !Number.isInteger(after)) return {};
  return {
    beforeCommit: (committed) => {
      if (committed >= after) process.kill(process.pid, "SIGKILL");
    },
  };
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

if (isEntryPoint(import.meta.url)) process.exitCode = await main(process.argv.slice(2));

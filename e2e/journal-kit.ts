/**
 * The journal of a running system as a test reads it: every entry of both streams, as of now, in the form
 * an engineer would see it (bodies decoded as text, headers and summaries as JSON).
 */
import { entriesOf, JOURNAL_QUEUE, type JournalEntry, LATE_QUEUE, streamBounds } from "@fundraise/journal";
import amqp from "amqplib";

export async function dumpJournal(amqpUrl: string): Promise<JournalEntry[]> {
  const connection = await amqp.connect(amqpUrl);
  try {
    const entries: JournalEntry[] = [];
    for (const queue of [JOURNAL_QUEUE, LATE_QUEUE]) {
      const { last } = await streamBounds(connection, queue);
      if (last === undefined) continue;
      const channel = await connection.createChannel();
      await channel.prefetch(1000);
      await new Promise<void>((resolve, reject) => {
        void channel
          .consume(
            queue,
            (message) => {
              if (!message) return;
              channel.ack(message);
              entries.push(...entriesOf(message));
              if ((message.properties.headers?.["x-stream-offset"] as number) >= last) resolve();
            },
            { arguments: { "x-stream-offset": "first" } },
          )
          .catch(reject);
      });
      await channel.close();
    }
    return entries;
  } finally {
    await connection.close();
  }
}

/** An entry as text: everything it holds that a reader of the journal could see. */
export function textOf(entry: JournalEntry): string {
  const { body, ...rest } = entry;
  return `${JSON.stringify(rest)} ${body === undefined ? "" : Buffer.from(body).toString("utf8")}`;
}

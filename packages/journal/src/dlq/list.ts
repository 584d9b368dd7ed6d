import { deadLetterQueueOf, type SubscriptionRecord } from "@fundraise/bus";
import type { ChannelModel } from "amqplib";
import { queueState } from "./broker.ts";
import { discoverDeadLetterQueues } from "./discover.ts";
import { InputError } from "./errors.ts";
import type { QueueRow } from "./format.ts";
import { oldestDeadLetter } from "./peek.ts";

/**
 * Every announced dead-letter queue, and the `extra` ones named on the command line (a DLQ, or its main
 * queue), with depth and when its oldest message was dead-lettered; sorted by name.
 */
export async function listDeadLetterQueues(
  connection: ChannelModel,
  extra: string[] = [],
): Promise<QueueRow[]> {
  const announced = new Map<string, SubscriptionRecord>();
  for (const record of await discoverDeadLetterQueues(connection)) {
    announced.set(record.deadLetterQueue, record);
  }
  const names = new Set(announced.keys());
  for (const name of extra) names.add(name.endsWith(".dlq") ? name : deadLetterQueueOf(name));
  const rows: QueueRow[] = [];
  // One queue after the other: a read holds a whole queue's messages, one queue's at a time is enough.
  for (const queue of [...names].sort()) {
    const record = announced.get(queue);
    const row = await inspect(connection, queue, record);
    if (row.gone && !record) {
      throw new InputError(`no dead-letter queue ${queue}: not announced and no such queue`);
    }
    rows.push(row);
  }
  return rows;
}

async function inspect(
  connection: ChannelModel,
  queue: string,
  record: SubscriptionRecord | undefined,
): Promise<QueueRow> {
  const state = await queueState(connection, queue);
  const row: QueueRow = {
    queue,
    consumer: record?.consumer,
    event: record?.event,
    service: record?.service,
    depth: state.exists ? state.depth : undefined,
    oldestAt: undefined,
    gone: !state.exists,
  };
  if (state.exists && state.depth > 0) row.oldestAt = await oldestDeadLetter(connection, queue, state.depth);
  return row;
}

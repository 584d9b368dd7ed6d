import { redactUrl } from "@fundraise/bus";
import type { Channel, ChannelModel } from "amqplib";
import amqp from "amqplib";

export const DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672";

/** One connection for one command; its errors are left to the operation that meets them. */
export async function connect(url: string): Promise<ChannelModel> {
  let connection: ChannelModel;
  try {
    connection = await amqp.connect(url, {
      clientProperties: { connection_name: "dlq-cli" },
      timeout: 10_000,
    });
  } catch (error) {
    throw new Error(`cannot connect to ${redactUrl(url)}: ${messageOf(error)}`, { cause: error });
  }
  // Without a listener an 'error' event would crash the process; the failing call rejects anyway.
  connection.on("error", () => undefined);
  return connection;
}

export type QueueState = { exists: true; depth: number; consumers: number } | { exists: false };

/**
 * A passive declare on a channel of its own: a missing queue is a 404 that closes the channel it was
 * asked on, which must not be one in use.
 */
export async function queueState(connection: ChannelModel, queue: string): Promise<QueueState> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  try {
    const ok = await channel.checkQueue(queue);
    return { exists: true, depth: ok.messageCount, consumers: ok.consumerCount };
  } catch (error) {
    if ((error as { code?: unknown }).code === 404) return { exists: false };
    throw error;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** A channel whose 'error' events are swallowed: the pending call on it rejects with the same error. */
export async function quietChannel(connection: ChannelModel): Promise<Channel> {
  const channel = await connection.createChannel();
  channel.on("error", () => undefined);
  return channel;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

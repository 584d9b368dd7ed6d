import type { Channel, Message } from "amqplib";
import type { Logger } from "pino";

/**
 * Acknowledges one channel's deliveries in batches: the handlers that finish within one turn of the event
 * loop are acknowledged together, by one `basic.ack` with `multiple` for the longest run of finished
 * deliveries in delivery order, and one each for those finished ahead of an earlier one still running
 * (which must not wait: an unacknowledged delivery holds a place of the prefetch). Every delivery must be
 * announced with `delivered` in the order the channel hands them out.
 */
export class BatchedAcks {
  /** Delivery tags not acknowledged yet, in delivery order (increasing); `head` is the first. */
  private readonly outstanding: number[] = [];
  private head = 0;
  /** Finished, to be acknowledged at the next flush. */
  private readonly finished = new Set<number>();
  /** Finished and acknowledged alone, ahead of an earlier delivery. */
  private readonly ackedAlone = new Set<number>();
  private scheduled = false;

  constructor(
    private readonly channel: Channel,
    private readonly log: Logger,
  ) {}

  delivered(message: Message): void {
    this.outstanding.push(message.fields.deliveryTag);
  }

  ack(message: Message): void {
    this.finished.add(message.fields.deliveryTag);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Sends what is finished now (the bus does so before closing the channel). */
  flush(): void {
    this.scheduled = false;
    // The run of deliveries at the head that are all done: one ack with `multiple` covers it.
    let upTo: number | undefined;
    while (this.head < this.outstanding.length) {
      const tag = this.outstanding[this.head] as number;
      if (this.finished.delete(tag)) upTo = tag;
      else if (!this.ackedAlone.delete(tag)) break;
      this.head += 1;
    }
    if (this.head > 1024) {
      this.outstanding.splice(0, this.head);
      this.head = 0;
    }
    try {
      if (upTo !== undefined) this.channel.ack(tagged(upTo), true);
      for (const tag of this.finished) {
        this.channel.ack(tagged(tag), false);
        this.ackedAlone.add(tag);
      }
    } catch (error) {
      // The channel died with the connection: the broker redelivers what it had not been told.
      this.log.debug({ err: error }, "acks not sent (channel closed)");
    }
    this.finished.clear();
  }
}

const tagged = (deliveryTag: number) => ({ fields: { deliveryTag } }) as Message;

import type { ConsumeMessage } from "amqplib";

/**
 * A consumer's deliveries, taken one at a time by an async loop: the broker pushes them in order while
 * the loop is still busy committing the previous one.
 */
export class Deliveries {
  private readonly queued: ConsumeMessage[] = [];
  private waiter: ((message: ConsumeMessage | undefined) => void) | undefined;
  private ended = false;
  private count = 0;
  private onPush: (() => void) | undefined;

  push(message: ConsumeMessage): void {
    this.count++;
    this.onPush?.();
    if (this.waiter) this.take()(message);
    else this.queued.push(message);
  }

  /** The broker cancelled the consumer: nothing more will come. */
  end(): void {
    this.ended = true;
    this.onPush?.();
    this.waiter?.(undefined);
    this.waiter = undefined;
  }

  /** Resolves once `total` deliveries came in all, or on the end, or after `quietMs` without one. */
  received(total: number, quietMs: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        clearTimeout(timer);
        if (this.count >= total || this.ended) {
          this.onPush = undefined;
          resolve();
        } else {
          timer = setTimeout(() => {
            this.onPush = undefined;
            resolve();
          }, quietMs);
        }
      };
      this.onPush = check;
      check();
    });
  }

  /** The next delivery; undefined once ended or after `quietMs` without one. */
  next(quietMs: number): Promise<ConsumeMessage | undefined> {
    const message = this.queued.shift();
    if (message || this.ended) return Promise.resolve(message);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, quietMs);
      this.waiter = (next) => {
        clearTimeout(timer);
        resolve(next);
      };
    });
  }

  private take(): (message: ConsumeMessage | undefined) => void {
    const waiter = this.waiter!;
    this.waiter = undefined;
    return waiter;
  }
}

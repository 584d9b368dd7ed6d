/**
 * An async iterable fed by `push`, read once. A push resolves when the reader takes its item, so a writer
 * that waits for it never gets ahead of the reader (backpressure). `fail` rejects the items not taken and
 * ends the reading with the error.
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: { value: T; taken: () => void; dropped: (error: Error) => void }[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  /** Items pushed and not taken yet. */
  get waiting(): number {
    return this.items.length;
  }

  push(value: T): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.reject(new Error("pushed after the end"));
    return new Promise((taken, dropped) => {
      this.items.push({ value, taken, dropped });
      this.signal();
    });
  }

  /** No more items: the reading ends after those pushed. */
  end(): void {
    this.ended = true;
    this.signal();
  }

  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const item of this.items.splice(0)) item.dropped(error);
    this.signal();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.failure) throw this.failure;
      const item = this.items.shift();
      if (item) {
        item.taken();
        yield item.value;
      } else if (this.ended) {
        return;
      } else {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    }
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

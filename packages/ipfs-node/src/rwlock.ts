/** Gives the lock back; a second call does nothing. */
export type Release = () => void;

/**
 * Kubo's GC lock: garbage collection holds it exclusively, each `add` and `pin/add` shared. Waiters are
 * served in arrival order (consecutive shared waiters together): once a GC waits, adds that start after
 * it wait for it, so a steady stream of adds cannot keep a GC out forever, nor a GC the adds.
 */
export class GcLock {
  private sharedHolders = 0;
  private exclusiveHeld = false;
  private readonly waiting: { exclusive: boolean; grant: () => void }[] = [];

  /** Held by an add (from its first block to its pin) or a `pin/add`. */
  shared(): Promise<Release> {
    return this.acquire(false);
  }

  /** Held by a GC, alone. */
  exclusive(): Promise<Release> {
    return this.acquire(true);
  }

  /** What holds and waits for the lock now (for tests and diagnostics). */
  get state(): { shared: number; exclusive: boolean; waiting: number } {
    return { shared: this.sharedHolders, exclusive: this.exclusiveHeld, waiting: this.waiting.length };
  }

  private acquire(exclusive: boolean): Promise<Release> {
    return new Promise<Release>((resolve) => {
      this.waiting.push({ exclusive, grant: () => resolve(this.releaser(exclusive)) });
      this.dispatch();
    });
  }

  private releaser(exclusive: boolean): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (exclusive) this.exclusiveHeld = false;
      else this.sharedHolders--;
      this.dispatch();
    };
  }

  /** Grants the lock to the waiters at the head of the queue that can have it now. */
  private dispatch(): void {
    for (;;) {
      const next = this.waiting[0];
      if (next === undefined || this.exclusiveHeld) return;
      if (next.exclusive) {
        if (this.sharedHolders > 0) return;
        this.exclusiveHeld = true;
      } else {
        this.sharedHolders++;
      }
      this.waiting.shift();
      next.grant();
    }
  }
}

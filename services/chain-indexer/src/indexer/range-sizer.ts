/**
 * The size of the next `eth_getLogs` block range: halves when the provider refuses a range (too many
 * results, range too large, time-out), doubles after each accepted one, always within [min, max].
 */
export interface RangeSizer {
  readonly size: number;
  /** The provider answered: try a larger range next time. */
  accepted(): void;
  /** The provider refused: returns false when the range is already the smallest allowed. */
  refused(): boolean;
}

export function createRangeSizer(limits: { min: number; max: number }): RangeSizer {
  let size = limits.max;
  return {
    get size() {
      return size;
    },
    accepted() {
      size = Math.min(limits.max, size * 2);
    },
    refused() {
      if (size <= limits.min) return false;
      size = Math.max(limits.min, Math.floor(size / 2));
      return true;
    },
  };
}

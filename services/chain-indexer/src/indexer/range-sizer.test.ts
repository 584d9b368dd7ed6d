import { describe, expect, it } from "vitest";
import { createRangeSizer } from "./range-sizer.ts";

describe("range sizer", () => {
  it("starts at the largest range, halves on each refusal down to the smallest, then says so", () => {
    const sizer = createRangeSizer({ min: 3, max: 20 });
    expect(sizer.size).toBe(20);
    const sizes: number[] = [];
    while (sizer.refused()) sizes.push(sizer.size);
    expect(sizes).toEqual([10, 5, 3]);
    expect(sizer.refused()).toBe(false);
    expect(sizer.size).toBe(3);
  });

  it("grows back after accepted ranges, never past the largest", () => {
    const sizer = createRangeSizer({ min: 1, max: 16 });
    for (let i = 0; i < 4; i++) sizer.refused();
    expect(sizer.size).toBe(1);
    const sizes: number[] = [];
    for (let i = 0; i < 6; i++) {
      sizer.accepted();
      sizes.push(sizer.size);
    }
    expect(sizes).toEqual([2, 4, 8, 16, 16, 16]);
  });
});

import { describe, expect, it } from "vitest";
import { instanceName, parseScale, restartBudget } from "./instances.ts";

const services = ["auth", "gateway", "users"];

describe("pnpm start's instances", () => {
  it("--scale names counts per service; the rest run once", () => {
    expect([...parseScale("users=3, gateway=2", services)]).toEqual([
      ["auth", 1],
      ["gateway", 2],
      ["users", 3],
    ]);
    expect([...parseScale(undefined, services).values()]).toEqual([1, 1, 1]);
    expect(instanceName("users", 0)).toBe("users");
    expect(instanceName("users", 2)).toBe("users#3");
  });

  it("--scale refuses unknown services, counts out of 1..16 and other shapes", () => {
    for (const bad of ["mail=2", "users=0", "users=17", "users", "users=2;auth=2", "=2"]) {
      expect(() => parseScale(bad, services), bad).toThrow(/--scale/);
    }
  });

  it("restarts within a budget per window: doubling delays, then stop; crashes far apart always restart", () => {
    const budget = restartBudget({ max: 3, windowMs: 60_000, baseDelayMs: 500, maxDelayMs: 1_500 });
    expect([0, 1_000, 2_000].map((t) => budget.crashed(t))).toEqual([500, 1_000, 1_500]);
    expect(budget.crashed(3_000)).toBeNull();
    const rare = restartBudget({ max: 3, windowMs: 60_000 });
    for (let hour = 0; hour < 10; hour++) expect(rare.crashed(hour * 3_600_000)).toBe(500);
  });
});

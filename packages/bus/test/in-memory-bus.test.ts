import { defineEvent, defineRpc, isAppError } from "@fundraise/protocol";
import Type from "typebox";
import { describe, expect, it } from "vitest";
import { withMessage } from "../src/index.ts";
import { createInMemoryBus } from "../src/testing/index.ts";

const Add = defineRpc("users.math.add", {
  request: Type.Object({ a: Type.Integer(), b: Type.Integer() }),
  response: Type.Integer(),
});
const Added = defineEvent("users.math.added", Type.Object({ sum: Type.Integer() }));

describe("in-memory bus", () => {
  it("answers served calls and is unavailable for others", async () => {
    const bus = createInMemoryBus();
    await expect(bus.call(Add, { a: 1, b: 2 })).rejects.toMatchObject({
      kind: "unavailable",
      code: "SERVICE_UNAVAILABLE",
    });
    await bus.serve(Add, async ({ a, b }) => a + b);
    await expect(bus.call(Add, { a: 1, b: 2 })).resolves.toBe(3);
  });

  it("passes a success reply's message to callWithMessage, like the real bus", async () => {
    const bus = createInMemoryBus();
    await bus.serve(Add, async ({ a, b }) => withMessage(a + b, "rounded"));
    await expect(bus.callWithMessage(Add, { a: 1, b: 2 })).resolves.toEqual({ data: 3, message: "rounded" });
    await expect(bus.call(Add, { a: 1, b: 2 })).resolves.toBe(3);
  });

  it("validates requests and times out like the real bus", async () => {
    const bus = createInMemoryBus();
    await bus.serve(Add, async () => new Promise<number>(() => undefined));
    const invalid = await bus.call(Add, { a: 1, b: "x" } as never).catch((error: unknown) => error);
    expect(isAppError(invalid) && invalid.kind).toBe("validation");
    await expect(bus.call(Add, { a: 1, b: 2 }, { timeoutMs: 20 })).rejects.toMatchObject({ kind: "timeout" });
  });

  it("honours an absolute deadline", async () => {
    const bus = createInMemoryBus();
    let seen: number | undefined;
    await bus.serve(Add, async ({ a, b }, ctx) => {
      seen = ctx.deadline;
      return a + b;
    });
    const deadline = Date.now() + 1000;
    await bus.call(Add, { a: 1, b: 1 }, { timeoutMs: 60_000, deadline });
    expect(seen).toBe(deadline);
  });

  it("delivers published events to subscribers and records them", async () => {
    const bus = createInMemoryBus();
    const got: number[] = [];
    await bus.subscribe("test", Added, async ({ sum }) => {
      got.push(sum);
    });
    await bus.publish(Added, { sum: 5 });
    expect(got).toEqual([5]);
    expect(bus.published).toEqual([{ name: "users.math.added", payload: { sum: 5 } }]);
  });
});

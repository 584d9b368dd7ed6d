import type { MessageProperties } from "amqplib";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { messageContext } from "../src/consumers.ts";
import { Header } from "../src/headers.ts";

/** A logger whose lines land in `lines`, and which counts the children made of it. */
function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  let children = 0;
  const child = log.child.bind(log);
  log.child = ((...args: Parameters<typeof child>) => {
    children += 1;
    return child(...args);
  }) as typeof log.child;
  return { log, lines, children: () => children };
}

const properties = (headers: Record<string, unknown>) =>
  ({ messageId: "m-1", headers }) as unknown as MessageProperties;

describe("a handler's context", () => {
  it("reads the request id, deadline and trace context from the headers", () => {
    const { log } = recordingLogger();
    const ctx = messageContext(
      log,
      properties({
        [Header.REQUEST_ID]: "r-1",
        [Header.DEADLINE]: 1_700_000_000_000,
        traceparent: "00-ab-cd-01",
      }),
      { rpc: "users.count" },
      1,
    );
    expect(ctx).toMatchObject({
      requestId: "r-1",
      messageId: "m-1",
      deadline: 1_700_000_000_000,
      traceparent: "00-ab-cd-01",
      attempt: 1,
    });
  });

  it("makes its child logger only when the handler logs, once, with the request id and bindings", () => {
    const { log, lines, children } = recordingLogger();
    const ctx = messageContext(log, properties({ [Header.REQUEST_ID]: "r-2" }), { rpc: "users.count" }, 1);
    expect(children()).toBe(0);
    ctx.log.info("first");
    ctx.log.warn("second");
    expect(children()).toBe(1);
    expect(lines.map(({ msg, requestId, rpc }) => ({ msg, requestId, rpc }))).toEqual([
      { msg: "first", requestId: "r-2", rpc: "users.count" },
      { msg: "second", requestId: "r-2", rpc: "users.count" },
    ]);
  });

  it("keeps the child logger when the context is copied with other options", () => {
    const { log, lines } = recordingLogger();
    const ctx = messageContext(
      log,
      properties({ [Header.REQUEST_ID]: "r-3" }),
      { event: "e", attempt: 2 },
      2,
    );
    const copy = { ...ctx, timeoutMs: 50 };
    copy.log.info("from the copy");
    expect(lines[0]).toMatchObject({ msg: "from the copy", requestId: "r-3", event: "e", attempt: 2 });
  });
});

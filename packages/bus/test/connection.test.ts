import { describe, expect, it } from "vitest";
import { redactUrl, withHeartbeat } from "../src/connection.ts";
import { deadLetterQueueOf, retryQueueOf, rpcQueueOf, subscriptionQueueOf } from "../src/topology.ts";

describe("connection URL handling", () => {
  it("adds a heartbeat unless one is set", () => {
    expect(withHeartbeat("amqp://guest:guest@127.0.0.1:5672/v")).toBe(
      "amqp://guest:guest@127.0.0.1:5672/v?heartbeat=10",
    );
    expect(withHeartbeat("amqp://h/v?heartbeat=30")).toBe("amqp://h/v?heartbeat=30");
  });

  it("never logs the password", () => {
    expect(redactUrl("amqp://user:s3cret@host:5672/vh")).toBe("amqp://user:***@host:5672/vh");
    expect(redactUrl("not a url")).toBe("<unparseable url>");
  });
});

describe("queue names", () => {
  it("follows the topology's naming", () => {
    expect(rpcQueueOf("users")).toBe("users.rpc");
    const queue = subscriptionQueueOf("notifications", "users.user.deleted");
    expect(queue).toBe("notifications.users.user.deleted");
    expect(deadLetterQueueOf(queue)).toBe("notifications.users.user.deleted.dlq");
    expect(retryQueueOf(queue, 2000)).toBe("notifications.users.user.deleted.retry.2000ms");
  });
});

import type { FastifyReply, FastifyRequest } from "fastify";
import { Redis } from "ioredis";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../../../../scripts/lib/processes.ts";
import { createIdempotencyStore } from "./idempotency.ts";

// Redis down (restarting, say): the gateway's real client, on a port where nothing listens.
let redis: Redis;
afterAll(() => redis?.disconnect());

it("a key that cannot be checked while Redis is down refuses the write as unavailable (503), not internal", async () => {
  redis = new Redis(`redis://127.0.0.1:${await freePort()}`, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  redis.on("error", () => {});
  const store = createIdempotencyStore(redis, "test:down:");
  const request = {
    headers: { "idempotency-key": "key-1" },
    caller: { userId: 7 },
    method: "PUT",
    routeOptions: { url: "/Project/Rate/:id/:rating" },
    ip: "198.18.0.1",
  } as unknown as FastifyRequest;
  await expect(store.use(request, {} as FastifyReply, { id: 1, rating: 4 })).rejects.toMatchObject({
    kind: "unavailable",
    code: "SERVICE_UNAVAILABLE",
  });
});

import amqp from "amqplib";
import { afterEach, describe, expect, it, vi } from "vitest";

// The test vhost every integration file makes, both ways it can be made: through the management API
// (what scripts/infra-up.sh sets up) and through rabbitmqctl when the API does not answer.

/** Whether a client can open a connection to the vhost now. */
const connects = (url: string) =>
  amqp.connect(url).then(
    async (connection) => {
      await connection.close();
      return true;
    },
    () => false,
  );

/** vhost.ts afresh (its choice of API or rabbitmqctl is made once per module), with this API URL. */
async function freshVhostModule(apiUrl: string | undefined) {
  vi.resetModules();
  if (apiUrl) vi.stubEnv("RABBITMQ_API_URL", apiUrl);
  return import("../src/testing/vhost.ts");
}

const managementAnswers = await fetch("http://127.0.0.1:15672/api/overview", {
  headers: { authorization: `Basic ${Buffer.from("guest:guest").toString("base64")}` },
}).then(
  (res) => res.ok,
  () => false,
);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe.each([
  { way: "the management API", apiUrl: undefined, skip: !managementAnswers },
  // Port 1: nothing answers there, so the vhosts are made with rabbitmqctl.
  { way: "rabbitmqctl (no management API)", apiUrl: "http://guest:guest@127.0.0.1:1/", skip: false },
])("a test vhost made through $way", ({ apiUrl, skip }) => {
  it.skipIf(skip)(
    "takes connections; refuses them while access is denied; is gone once disposed",
    async () => {
      const { createTestVhost } = await freshVhostModule(apiUrl);
      const vhost = await createTestVhost("vhost_test");
      try {
        expect(vhost.vhost).toMatch(/^vhost_test_[0-9a-f]{8}$/);
        expect(await connects(vhost.url)).toBe(true);
        await vhost.denyAccess();
        expect(await connects(vhost.url)).toBe(false);
        await vhost.allowAccess();
        expect(await connects(vhost.url)).toBe(true);
      } finally {
        await vhost.dispose();
      }
      expect(await connects(vhost.url)).toBe(false);
    },
  );
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { type System, startSystem } from "./system.ts";

// Tokens that live one minute (the shortest the auth service allows), and bad input to the user
// endpoints, on the running system.
let sys: System;
beforeAll(async () => {
  sys = await startSystem({ env: { TOKEN_TTL_SECONDS: "60" } });
});
afterAll(() => sys?.stop());

const { api, signedUpUser, tokenOf } = createClient(() => sys);

describe("user endpoints", () => {
  it("refuse bad input with a 4xx envelope and change nothing", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    const before = (await api("GET", "/user/get", { token })).body.data;
    const other = await signedUpUser();
    const big = "x".repeat(1_000_000);
    const cases: [string, string, unknown, number[]][] = [
      ["PUT", "/user/update", { username: "x" }, [400]],
      ["PUT", "/user/update", { username: "has space" }, [400]],
      ["PUT", "/user/update", { mailAddress: "not-an-email" }, [400]],
      ["PUT", "/user/update", { name: 42, surname: ["a"] }, [400]],
      ["PUT", "/user/update", { name: big }, [400, 413]],
      ["PUT", "/user/update", { username: other.username.toUpperCase() }, [409]],
      ["PUT", "/user/update", "[1,2", [400]],
      ["DELETE", "/user/deleteuser/abc", undefined, [400, 403]],
      ["PATCH", `/user/updaterole/0x123/Admin`, undefined, [400, 403]],
      ["GET", "/user/getcoowners/abc", undefined, [400]],
    ];
    for (const [method, path, body, statuses] of cases) {
      const res =
        typeof body === "string"
          ? await api(method, path, { token, raw: body })
          : await api(method, path, { token, body });
      expect(statuses, `${method} ${path} → ${res.status} ${res.body.message}`).toContain(res.status);
      expect(res.body).toMatchObject({ success: false, data: null });
    }
    expect((await api("GET", "/user/get", { token })).body.data).toEqual(before);
  });
});

describe("an expired token", () => {
  it("is refused with 401 once its `exp` has passed", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    expect((await api("GET", "/user/get", { token })).status).toBe(200);
    const { exp } = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as {
      exp: number;
    };
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, exp * 1000 - Date.now()) + 1500));
    const res = await api("GET", "/user/get", { token });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false, data: null });
  }, 120_000);
});

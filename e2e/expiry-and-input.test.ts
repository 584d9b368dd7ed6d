import { waitFor } from "@fundraise/bus/testing";
import { ADMIN_ROLE, confirm, createProvider, registryAt } from "@fundraise/contracts";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, createClient } from "./client.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";
import { type System, startSystem } from "./system.ts";

// Bad input to the user endpoints, on the shared system; and tokens that live 5 s (a lifetime for tests
// only) on a system of this file's own, started beside it.
const TOKEN_TTL_SECONDS = 5;
let shared: SharedSystem;
let expiring: System;
let starting: Promise<System> | undefined;
beforeAll(async () => {
  // Sign-in and the user endpoints only: no storage, projects or IPFS for this one.
  starting = startSystem({
    services: ["users", "auth", "gateway"],
    env: { TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS) },
  });
  shared = await sharedSystem();
  expiring = await starting;
});
afterAll(async () => {
  // Stopped even when the shared system failed first.
  await starting?.then(
    (sys) => sys.stop(),
    () => {},
  );
});

describe("user endpoints", () => {
  const { api, signedUpUser, tokenOf } = createClient(() => shared);

  it("refuse malformed input with 400 past the role check (an Admin calls), and change nothing", async () => {
    const admin = await signedUpUser();
    const chainAccount = new Wallet(
      shared.chainAdminKey,
      createProvider(shared.anvil.url, shared.anvil.chainId),
    );
    await confirm(
      registryAt(shared.deployment.registry, chainAccount).getFunction("grantRole")(
        ADMIN_ROLE,
        admin.wallet.address,
      ),
    );
    const token = await tokenOf(admin.wallet);
    const other = await signedUpUser();
    const mine = async () => {
      const res = await api("GET", "/user/get", { token });
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const others = async () => {
      const res = await api("GET", "/user/getall", { token });
      expect(res.status).toBe(200);
      return (res.body.data as { id: number }[]).find((u) => u.id === other.userId);
    };
    const mineBefore = await mine();
    expect(mineBefore).toMatchObject({ id: admin.userId, role: "Admin" });
    const othersBefore = await others();
    expect(othersBefore).toMatchObject({ id: other.userId, username: other.username, role: "Base" });

    const id = other.userId;
    const long = "x".repeat(1_000_000);
    const huge = "x".repeat(1_100_000);
    const badUsername = "Invalid username: must be 3-32 letters, digits, '_', '.' or '-'.";
    const plainId = expect.stringContaining("must be a plain decimal integer");
    const cases: [string, string, unknown, number, unknown][] = [
      ["PUT", "/user/update", { username: "x" }, 400, badUsername],
      ["PUT", "/user/update", { username: "has space" }, 400, badUsername],
      [
        "PUT",
        "/user/update",
        { mailAddress: "not-an-email" },
        400,
        "Invalid mailAddress: must be a valid e-mail address.",
      ],
      ["PUT", "/user/update", { name: 42, surname: ["a"] }, 400, expect.any(String)],
      // Under the gateway's 1 MiB body limit: a field too long (400). Over it: the body is too large (413).
      ["PUT", "/user/update", { name: long }, 400, expect.any(String)],
      ["PUT", "/user/update", { name: huge }, 413, "The request body is too large."],
      [
        "PUT",
        "/user/update",
        { username: other.username.toUpperCase() },
        409,
        "This username is already taken.",
      ],
      ["PUT", "/user/update", "[1,2", 400, "The request body is not valid JSON."],
      // rules.md §7.4: path ids are plain decimal integers; each of these once meant the other user.
      ["DELETE", "/user/deleteuser/abc", undefined, 400, plainId],
      ["DELETE", `/user/deleteuser/${id}e0`, undefined, 400, plainId],
      ["DELETE", `/user/deleteuser/0x${id.toString(16)}`, undefined, 400, plainId],
      ["DELETE", `/user/deleteuser/+${id}`, undefined, 400, plainId],
      ["DELETE", `/user/deleteuser/%20${id}`, undefined, 400, plainId],
      ["DELETE", `/user/deleteuser/${id}.0`, undefined, 400, plainId],
      ["DELETE", "/user/deleteuser/99999999999", undefined, 400, plainId],
      ["PATCH", "/user/updaterole/0x123/Admin", undefined, 400, "Invalid address: use 0x and 40 hex digits."],
      [
        "PATCH",
        `/user/updaterole/${other.wallet.address}/Boss`,
        undefined,
        400,
        'Invalid role "Boss": use Admin, Whitelist, Viewer, Base or Blacklist.',
      ],
      ["GET", "/user/getcoowners/abc", undefined, 400, plainId],
    ];
    for (const [method, path, body, status, message] of cases) {
      const res: Answer =
        typeof body === "string"
          ? await api(method, path, { token, raw: body })
          : await api(method, path, { token, body });
      const what = `${method} ${path} → ${res.status} ${res.body.message}`;
      expect(res.status, what).toBe(status);
      expect(res.body, what).toEqual({ data: null, success: false, message });
    }
    expect(await mine()).toEqual(mineBefore);
    // Not deleted, role unchanged.
    expect(await others()).toEqual(othersBefore);
  });
});

describe("an expired token", () => {
  const { api, signedUpUser, tokenOf } = createClient(() => expiring);

  it("is refused with 401 once its `exp` has passed, and not before", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    const { iat, exp } = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as {
      iat: number;
      exp: number;
    };
    expect(exp - iat).toBe(TOKEN_TTL_SECONDS);
    expect((await api("GET", "/user/get", { token })).status).toBe(200);
    let last: Answer | undefined;
    let refusedAt = 0;
    await waitFor(
      async () => {
        last = await api("GET", "/user/get", { token });
        refusedAt = Date.now();
        return last.status !== 200;
      },
      exp * 1000 - Date.now() + 5000,
      "the token to expire",
    );
    // Accepted until `exp` (whole seconds), refused from then on.
    expect(refusedAt).toBeGreaterThanOrEqual(exp * 1000);
    expect(last?.status).toBe(401);
    expect(last?.body).toEqual({
      data: null,
      success: false,
      message: "The token has expired; sign in again.",
    });
  });
});

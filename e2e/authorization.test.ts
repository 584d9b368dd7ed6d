import { waitFor } from "@fundraise/bus/testing";
import { ADMIN_ROLE, confirm, createProvider, registryAt, UserStatus } from "@fundraise/contracts";
import { randomWallet } from "@fundraise/contracts/testing";
import { Wallet } from "ethers";
import { Redis } from "ioredis";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Every sign-in and user endpoint × every kind of caller, on the running system. Roles come from the
// chain, as in production: the registry's admin role and user statuses, read by the auth service at login.
// On the shared system: every caller here is this file's own, and so is the chain account that sets roles.
const ROLES = ["anonymous", "Base", "Blacklist", "Whitelist", "Viewer", "Admin"] as const;
type Role = (typeof ROLES)[number];

let sys: SharedSystem;
const callers = new Map<Role, { wallet: Wallet; token: string | undefined; id: number }>();
let n = 0;

const client = createClient(() => sys);
const call = async (method: string, path: string, token?: string, body?: unknown) => {
  const res = await client.api(method, path, { ...(token ? { token } : {}), body });
  return { status: res.status, json: res.body };
};

/** The registry as this file's chain account (an admin of it) uses it. */
const chainAdmin = () =>
  registryAt(
    sys.deployment.registry,
    new Wallet(sys.chainAdminKey, createProvider(sys.anvil.url, sys.anvil.chainId)),
  );

async function newUser(role: Exclude<Role, "anonymous">, via = client) {
  const { wallet, userId: id } = await via.signedUpUser();
  const registry = chainAdmin();
  const status = {
    Base: undefined,
    Whitelist: UserStatus.Whitelisted,
    Blacklist: UserStatus.Blacklisted,
    Viewer: UserStatus.Viewer,
    Admin: undefined,
  }[role];
  if (status !== undefined) await confirm(registry.getFunction("editUserStatus")(wallet.address, status));
  if (role === "Admin") await confirm(registry.getFunction("grantRole")(ADMIN_ROLE, wallet.address));
  const login = await via.login(wallet);
  expect(login.status, `${role}: ${JSON.stringify(login.body)}`).toBe(200);
  return { wallet, token: login.body.data as string, id };
}

beforeAll(async () => {
  sys = await sharedSystem();
  for (const role of ROLES) {
    if (role === "anonymous") callers.set(role, { wallet: randomWallet(), token: undefined, id: 0 });
    else callers.set(role, await newUser(role));
  }
});

/** A project id no project has (the largest path id), on a system other files add projects to. */
const NO_PROJECT = 2_147_483_647;

const tokenOf = (role: Role) => callers.get(role)?.token;
const row = (...statuses: number[]) =>
  Object.fromEntries(ROLES.map((r, i) => [r, statuses[i]])) as Record<Role, number>;

describe("authorization matrix", () => {
  const cases: [string, () => Promise<Record<Role, number>>, Record<Role, number>][] = [
    [
      "GET /user/get",
      async () => each((t) => call("GET", "/user/get", t)),
      row(401, 200, 200, 200, 200, 200),
    ],
    [
      // Blacklist is read-only (rules.md §8.1): its profile too.
      "PUT /user/update",
      async () => each((t) => call("PUT", "/user/update", t, { surname: "Updated" })),
      row(401, 200, 403, 200, 200, 200),
    ],
    [
      "GET /user/getall",
      async () => each((t) => call("GET", "/user/getall", t)),
      row(401, 403, 403, 403, 403, 200),
    ],
    [
      "GET /user/learnusercount",
      async () => each((t) => call("GET", "/user/learnusercount", t)),
      row(200, 200, 200, 200, 200, 200),
    ],
    [
      "PATCH /user/updaterole/{address}/{role}",
      async () => {
        const target = await newUser("Base");
        return each((t) => call("PATCH", `/user/updaterole/${target.wallet.address}/Viewer`, t));
      },
      row(401, 403, 403, 403, 403, 200),
    ],
    [
      "DELETE /user/deleteuser/{id}",
      async () => {
        const target = await newUser("Base");
        return each((t) => call("DELETE", `/user/deleteuser/${target.id}`, t));
      },
      row(401, 403, 403, 403, 403, 200),
    ],
    [
      "GET /Authentication/GetNonce/{address}",
      async () =>
        each((t, r) => call("GET", `/Authentication/GetNonce/${callers.get(r)?.wallet.address}`, t)),
      row(200, 200, 200, 200, 200, 200),
    ],
    [
      "POST /Authentication/Login",
      async () =>
        each(async (t, r) => {
          const wallet = callers.get(r)?.wallet as Wallet;
          const nonce = await call("GET", `/Authentication/GetNonce/${wallet.address}`);
          return call("POST", "/Authentication/Login", t, {
            address: wallet.address,
            signedMessage: await wallet.signMessage(`LOGIN: ${nonce.json.data}`),
          });
        }),
      // anonymous: a wallet that never signed up.
      row(401, 200, 200, 200, 200, 200),
    ],
    [
      "POST /Authentication/Register",
      async () =>
        each(async (t) => {
          const wallet = randomWallet();
          const username = `reg_${++n}_${wallet.address.slice(2, 8).toLowerCase()}`;
          return call("POST", "/Authentication/Register", t, {
            name: "R",
            surname: "G",
            username,
            mailAddress: `${username}@example.org`,
            signedMessage: await wallet.signMessage("REGISTER"),
          });
        }),
      row(201, 201, 201, 201, 201, 201),
    ],
    [
      "GET /Authentication/verify-email (wrong token)",
      async () =>
        each((t) => call("GET", "/Authentication/verify-email?email=x%40example.org&token=wrong", t)),
      row(400, 400, 400, 400, 400, 400),
    ],
    // Project membership (the projects service's) on a project that does not exist: every signed-in caller
    // learns that (404: no project, no invitation). The rows on real projects, with members and owners,
    // are in projects-authorization.test.ts.
    [
      "POST /user/invite",
      async () => each((t) => call("POST", "/user/invite", t, { projectID: NO_PROJECT, username: "nobody" })),
      row(401, 404, 404, 404, 404, 404),
    ],
    [
      "PUT /user/invitationreply",
      async () =>
        each((t) => call("PUT", "/user/invitationreply", t, { projectID: NO_PROJECT, isAccepted: true })),
      row(401, 404, 404, 404, 404, 404),
    ],
    [
      "GET /user/getcoowners/{projectID}",
      async () => each((t) => call("GET", `/user/getcoowners/${NO_PROJECT}`, t)),
      row(401, 404, 404, 404, 404, 404),
    ],
    [
      "DELETE /user/removecollab",
      async () =>
        each((t) => call("DELETE", "/user/removecollab", t, { projectID: NO_PROJECT, username: "nobody" })),
      row(401, 404, 404, 404, 404, 404),
    ],
    [
      "DELETE /user/delete",
      async () => {
        // Each role deletes a fresh account of its own, so the callers above survive.
        const result = {} as Record<Role, number>;
        for (const role of ROLES) {
          const token = role === "anonymous" ? undefined : (await newUser(role)).token;
          result[role] = (await call("DELETE", "/user/delete", token)).status;
        }
        return result;
      },
      row(401, 200, 200, 200, 200, 200),
    ],
  ];

  async function each(
    send: (token: string | undefined, role: Role) => Promise<{ status: number; json: { success: boolean } }>,
  ) {
    const result = {} as Record<Role, number>;
    for (const role of ROLES) {
      const res = await send(tokenOf(role), role);
      result[role] = res.status;
      expect(res.json.success, `${role} → ${res.status}`).toBe(res.status < 300);
    }
    return result;
  }

  it.each(cases)("%s", async (_name, run, expected) => {
    expect(await run()).toEqual(expected);
  });
});

/** The claims of a JWT, read as a client does (no verification). */
const claimsOf = (token: unknown) =>
  JSON.parse(Buffer.from(String(token).split(".")[1] as string, "base64url").toString("utf8")) as {
    role: string;
  };

/**
 * What the users service recorded of a user's role, and the chain's block: the message of a failed
 * assertion on which role won, so that a failure explains itself.
 */
async function roleStory(userId: number, blockNumber: number): Promise<string> {
  const db = new pg.Client({ connectionString: sys.databaseUrl });
  const provider = createProvider(sys.anvil.url, sys.anvil.chainId);
  try {
    await db.connect();
    const user = await db.query(
      `SELECT role, chain_role, chain_role_block, chain_role_log_index, admin_role_at
         FROM users."user" WHERE id = $1`,
      [userId],
    );
    const changes = await db.query(
      `SELECT previous_role, new_role, changed_by, source_tx, at
         FROM users.role_change WHERE user_id = $1 ORDER BY id`,
      [userId],
    );
    const block = await provider.getBlock(blockNumber);
    return JSON.stringify(
      { user: user.rows[0], changes: changes.rows, block: { blockNumber, timestamp: block?.timestamp } },
      null,
      1,
    );
  } finally {
    provider.destroy();
    await db.end();
  }
}

/**
 * An admin sets `user`'s role; once the auth service has revoked the older tokens, the user signs in
 * again (through `via`) and holds the admin's role. Answers the new token.
 */
async function adminSetsRoleThenSignIn(
  user: { wallet: Wallet; token: string },
  role: Exclude<Role, "anonymous">,
  via = client,
): Promise<string> {
  const changed = await call("PATCH", `/user/updaterole/${user.wallet.address}/${role}`, tokenOf("Admin"));
  expect(changed.status).toBe(200);
  // Older tokens are revoked before the change answers.
  expect((await call("GET", "/user/get", user.token)).status).toBe(401);
  const again = await via.login(user.wallet);
  expect(again.status).toBe(200);
  const token = again.body.data as string;
  expect(claimsOf(token).role).toBe(role);
  const me = await via.api("GET", "/user/get", { token });
  expect(me.status).toBe(200);
  expect((me.body.data as { role: string }).role).toBe(role);
  return token;
}

describe("which role wins, and revocation that survives Redis (rules.md §7.1, §7.9)", () => {
  it("an admin's demotion survives the next sign-in; a later chain change wins over it", async () => {
    const user = await newUser("Base");
    await adminSetsRoleThenSignIn(user, "Blacklist");

    const receipt = await confirm(
      chainAdmin().getFunction("editUserStatus")(user.wallet.address, UserStatus.Whitelisted),
    );
    const afterChain = await client.login(user.wallet);
    expect(afterChain.status).toBe(200);
    const role = claimsOf(afterChain.body.data).role;
    expect(role, role === "Whitelist" ? "" : await roleStory(user.id, receipt.blockNumber)).toBe("Whitelist");
  });

  it("a chain change that reaches the users service before any sign-in wins over an older demotion", async () => {
    // A client of its own (its own IP): the file's client has used up its sign-ins per minute.
    const own = createClient(() => sys);
    const user = await newUser("Base", own);
    const blacklisted = await adminSetsRoleThenSignIn(user, "Blacklist", own);

    const receipt = await confirm(
      chainAdmin().getFunction("editUserStatus")(user.wallet.address, UserStatus.Whitelisted),
    );
    // No sign-in: the indexer's fact alone changes the role, and the session follows it (a chain change
    // does not revoke, so the Blacklist token now acts as Whitelist).
    let seen: unknown;
    await waitFor(
      async () => {
        const me = await own.api("GET", "/user/get", { token: blacklisted });
        seen = me.body.data;
        return me.status === 200 && (seen as { role: string }).role === "Whitelist";
      },
      10_000,
      "the chain fact",
    ).catch(async (cause) => {
      const story = await roleStory(user.id, receipt.blockNumber);
      throw new Error(`the role did not follow the chain: ${JSON.stringify(seen)} ${story}`, { cause });
    });
    const next = await own.login(user.wallet);
    expect(claimsOf(next.body.data).role).toBe("Whitelist");
  });

  it("a chain change mined before an admin's demotion does not undo it, even in the same second (20 rounds)", async () => {
    const user = await newUser("Base");
    const db = new pg.Client({ connectionString: sys.databaseUrl });
    await db.connect();
    const wrong: string[] = [];
    try {
      for (let round = 0; round < 20; round++) {
        const status = round % 2 === 0 ? UserStatus.Viewer : UserStatus.Whitelisted;
        // Mined (receipt in hand) before the admin's request leaves; its fact reaches the users service after.
        const receipt = await confirm(
          chainAdmin().getFunction("editUserStatus")(user.wallet.address, status),
        );
        const demoted = await call(
          "PATCH",
          `/user/updaterole/${user.wallet.address}/Blacklist`,
          tokenOf("Admin"),
        );
        expect(demoted.status).toBe(200);
        await waitFor(
          async () =>
            Number(
              (await db.query(`select chain_role_block from users."user" where id = $1`, [user.id])).rows[0]
                ?.chain_role_block ?? 0,
            ) >= receipt.blockNumber,
          10_000,
          "the chain fact applied",
        );
        const { rows } = await db.query(`select role from users."user" where id = $1`, [user.id]);
        if (rows[0]?.role !== "Blacklist")
          wrong.push(`round ${round}: ${await roleStory(user.id, receipt.blockNumber)}`);
        expect(
          (await call("PATCH", `/user/updaterole/${user.wallet.address}/Base`, tokenOf("Admin"))).status,
        ).toBe(200);
      }
    } finally {
      await db.end();
    }
    expect(wrong.slice(0, 2), `${wrong.length} of 20 rounds ended with the chain's older role`).toEqual([]);
  });

  it("a session Redis lost is rebuilt from Postgres: revoked tokens stay refused, the role stays", async () => {
    const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
    try {
      const user = await newUser("Base");
      const key = `${sys.redisPrefix}session:${user.id}`;
      const token = await adminSetsRoleThenSignIn(user, "Viewer");

      await redis.del(key);
      expect((await call("GET", "/user/get", user.token)).status).toBe(401);
      // Rebuilt with the admin's revocation: the token issued before it stays refused.
      expect(Number(await redis.hget(key, "revokedBelow"))).toBeGreaterThan(1);

      await redis.del(key);
      expect((await call("GET", "/user/get", token)).status).toBe(200);
      expect(await redis.hget(key, "role")).toBe("Viewer");
    } finally {
      await redis.quit();
    }
  });
});

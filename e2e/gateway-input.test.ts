import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { join } from "node:path";
import { waitFor } from "@fundraise/bus/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, serviceNodeArgs, stopProcess } from "../scripts/lib/processes.ts";
import { testServiceCode } from "../scripts/lib/service-code.ts";
import { type Answer, createClient } from "./client.ts";
import {
  createPeople,
  expectEnvelope,
  hexOf,
  newContent,
  type ProjectDto,
  type User,
} from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Input the gateway once refused or coerced, on the running system (rules.md §8): long markdown in
// UpdateMarkDown's path, GetProjects with n ≤ 0, ids in JSON bodies, and clients that go away mid-request.
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);
let owner: User;
let invitee: User;
let project: ProjectDto;

const as = (user: User, method: string, path: string, body?: unknown) =>
  client.api(method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
const dto = (res: Answer) => res.body.data as ProjectDto;
const unique = (label: string) => `${label} ${randomBytes(4).toString("hex")}`;
const read = async () => {
  const res = await as(owner, "GET", `/Project/Get/${project.projectID}`);
  expectEnvelope(res, 200);
  return dto(res);
};

beforeAll(async () => {
  sys = await sharedSystem();
  [owner, invitee] = await Promise.all([people.newUser("Base"), people.newUser("Base")]);
  const added = await as(owner, "POST", "/Project/Add", {
    projectName: unique("gateway input"),
    fileHex: hexOf(newContent("gateway input", false).file),
  });
  expectEnvelope(added, 201);
  project = dto(added);
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` as is to `url`'s host and reads the answer until the server closes the connection. */
function raw(url: string, request: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk) => {
      text += chunk;
    });
    // The server may reset a connection it refused while we still write: what arrived counts.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      const [head = "", body = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const status = Number(statusLine.split(" ")[1]);
      if (!status) reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(":")).toLowerCase(),
          line.slice(line.indexOf(":") + 1).trim(),
        ]),
      );
      resolve({ status, headers, body });
    });
  });
}

describe("long markdown in PUT /Project/UpdateMarkDown/{id}/{markdown} (URLs up to 16 KB)", () => {
  const URL_LIMIT = 16_384;
  // Non-ASCII, line breaks, and every character that means something in a URL, encoded.
  const PIECE =
    "# Título — ünïcödé 日本語 🚀\nA line / with a slash, #hash, ?query, &and=1, 100% + plus; semi\r\n\ttab\n";
  const path = (encoded: string) => `/Project/UpdateMarkDown/${project.projectID}/${encoded}`;
  /** Text whose request path is exactly `length` bytes: PIECE's, padded with ASCII. */
  const textForPathOf = (length: number) => {
    const text = PIECE.repeat(Math.floor((length - path("").length) / encodeURIComponent(PIECE).length));
    return text + "x".repeat(length - path(encodeURIComponent(text)).length);
  };

  it("stores several KB of URL-encoded text exactly as decoded, as the web client sends it", async () => {
    const text = PIECE.repeat(40);
    expect(encodeURIComponent(text).length).toBeGreaterThan(8_000);
    const res = await as(owner, "PUT", path(encodeURIComponent(text)));
    expectEnvelope(res, 200);
    expect(dto(res).markDown).toBe(text);
    expect((await read()).markDown).toBe(text);
  });

  it("takes a URL of exactly 16384 bytes; one byte more is 414 in the envelope and changes nothing", async () => {
    const text = textForPathOf(URL_LIMIT);
    expect(path(encodeURIComponent(text)).length).toBe(URL_LIMIT);
    expectEnvelope(await as(owner, "PUT", path(encodeURIComponent(text))), 200);
    expect((await read()).markDown).toBe(text);

    const over = textForPathOf(URL_LIMIT + 1);
    expect(path(encodeURIComponent(over)).length).toBe(URL_LIMIT + 1);
    const res = await as(owner, "PUT", path(encodeURIComponent(over)));
    expectEnvelope(res, 414);
    expect(res.body.message).toBe(`The URL is longer than ${URL_LIMIT} bytes.`);
    expect((await read()).markDown).toBe(text);
  });

  it("answers 414 in the envelope however far over the limit, the path or the query string", async () => {
    const before = (await read()).markDown;
    for (const url of [
      path("y".repeat(20_000)),
      `/Project/Get/All?withHex=false&pad=${"z".repeat(20_000)}`,
      `/NoSuchRoute/${"q".repeat(20_000)}`,
    ]) {
      const res = await as(owner, "PUT", url);
      expectEnvelope(res, 414, url.slice(0, 40));
      expect(res.body.message).toBe(`The URL is longer than ${URL_LIMIT} bytes.`);
    }
    // Beyond what Node's parser takes at all (a request head over 32 KB), on a socket of its own.
    const huge = await raw(
      sys.gatewayUrl,
      `PUT ${path("w".repeat(100_000))} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.token}\r\nConnection: close\r\n\r\n`,
    );
    // Node's parser refuses a head this long; the gateway tells 414 from 431 by the refused chunk, which
    // holds the request line only when the request began in it (the kernel may deliver it in pieces).
    expect([414, 431]).toContain(huge.status);
    expect(huge.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(huge.body)).toMatchObject({ data: null, success: false });
    expect((await read()).markDown).toBe(before);
  });

  it("refuses the NUL character (in the path, the body, or the description) with 400, and changes nothing", async () => {
    const before = await read();
    for (const res of [
      await as(owner, "PUT", path("a%00b")),
      await as(owner, "PUT", path("x"), { markDown: "a\u0000b" }),
      await as(owner, "PUT", "/Project/Update", {
        projectID: project.projectID,
        projectName: before.projectName,
        projectDescription: "a\u0000b",
      }),
    ]) {
      expectEnvelope(res, 400);
      expect(res.body.message).toMatch(/must not contain the NUL character/);
    }
    expect(await read()).toEqual(before);
  });

  it("still takes the JSON body {markDown} over a long path", async () => {
    const res = await as(owner, "PUT", path(encodeURIComponent(PIECE.repeat(30))), {
      markDown: "from the body",
    });
    expectEnvelope(res, 200);
    expect((await read()).markDown).toBe("from the body");
  });

  it("refuses headers over 16 KB with 431 in the envelope", async () => {
    const res = await client.api("GET", "/user/learnusercount", {
      authorization: `Bearer ${"h".repeat(20_000)}`,
    });
    expectEnvelope(res, 431);
    expect(res.body.message).toBe("The request headers are too large.");
    const huge = await raw(
      sys.gatewayUrl,
      `GET /user/learnusercount HTTP/1.1\r\nHost: x\r\nX-Pad: ${"p".repeat(100_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(huge.status).toBe(431);
    expect(JSON.parse(huge.body).message).toBe("The request headers are too large.");
  });
});

describe("GET /Project/GetProjects/{n}: any int32, n ≤ 0 an empty list", () => {
  it("answers 200 with [] for 0, -0, -1 and the smallest int32", async () => {
    for (const n of ["0", "-0", "-1", "-2147483648"]) {
      const res = await client.api("GET", `/Project/GetProjects/${n}`, { authorization: "Bearer undefined" });
      expectEnvelope(res, 200, n);
      expect(res.body.data, n).toEqual([]);
    }
    const some = await as(owner, "GET", "/Project/GetProjects/5");
    expectEnvelope(some, 200);
    expect((some.body.data as unknown[]).length).toBeLessThanOrEqual(5);
  });

  it("still refuses what is not a plain decimal int32 with 400", async () => {
    for (const n of [
      "1e1",
      "%2B5",
      "%205",
      "0x10",
      "5.0",
      "-2147483649",
      "2147483648",
      "--1",
      "-",
      "-%205",
    ]) {
      const res = await client.api("GET", `/Project/GetProjects/${n}`);
      expectEnvelope(res, 400, n);
      expect(res.body.message, n).toBe(
        "Invalid params: /numberOfProjects must be a plain decimal integer from -2147483648 to 2147483647.",
      );
    }
  });

  it("keeps project ids unsigned: Get/-1 is 400", async () => {
    const res = await client.api("GET", "/Project/Get/-1");
    expectEnvelope(res, 400);
    expect(res.body.message).toBe(
      "Invalid params: /id must be a plain decimal integer from 0 to 2147483647.",
    );
  });
});

describe("ids in JSON bodies are plain decimal integers", () => {
  const problem = "must be a plain decimal integer from 0 to 2147483647";
  const coerced = (id: number): unknown[] => [
    `0x${id.toString(16)}`,
    ` ${id}`,
    `${id} `,
    `${id}e0`,
    `${id}.0`,
    `+${id}`,
    `${id}abc`,
    "",
    "２",
    true,
    false,
    -id,
    2_147_483_648,
    "2147483648",
    [id],
    { id },
  ];

  it("Update refuses each coerced form in every key casing, and changes nothing; '282' and 282 work", async () => {
    const id = project.projectID;
    const before = await read();
    for (const key of ["projectID", "ProjectID", "projectId", "projectid"]) {
      for (const value of coerced(id)) {
        const what = `${key}: ${JSON.stringify(value)}`;
        const res = await as(owner, "PUT", "/Project/Update/", {
          [key]: value,
          projectName: unique("coerced"),
        });
        expectEnvelope(res, 400, what);
        expect(res.body.message, what).toBe(`Invalid body: /projectID ${problem}.`);
      }
    }
    expect(await read()).toEqual(before);
    // The web client sends numbers as strings too.
    const name = unique("renamed");
    expectEnvelope(
      await as(owner, "PUT", "/Project/Update/", { ProjectID: String(id), ProjectName: name }),
      200,
    );
    expect((await read()).projectName).toBe(name);
    const again = unique("renamed again");
    expectEnvelope(await as(owner, "PUT", "/Project/Update/", { projectID: id, projectName: again }), 200);
    expect((await read()).projectName).toBe(again);
  });

  it("invite, invitationreply and removecollab refuse them too; the plain forms work", async () => {
    const id = project.projectID;
    const invitations = async () => {
      const res = await as(invitee, "GET", "/Project/GetAllInvitations");
      expectEnvelope(res, 200);
      return (res.body.data as ProjectDto[]).map((p) => p.projectID);
    };
    const memberships = async () => {
      const res = await as(invitee, "GET", "/Project/GetAllPermissioned/false");
      expectEnvelope(res, 200);
      return (res.body.data as ProjectDto[]).map((p) => p.projectID);
    };
    for (const value of coerced(id)) {
      const res = await as(owner, "PUT", "/User/Invite/", {
        ProjectId: value,
        username: invitee.username,
        role: "Editor",
      });
      expectEnvelope(res, 400, JSON.stringify(value));
      expect(res.body.message).toBe(`Invalid body: /projectID ${problem}.`);
    }
    expect(await invitations()).toEqual([]);
    expectEnvelope(
      await as(owner, "PUT", "/User/Invite/", {
        projectID: String(id),
        username: invitee.username,
        role: "Editor",
      }),
      201,
    );
    expect(await invitations()).toEqual([id]);

    for (const value of coerced(id)) {
      const res = await as(invitee, "POST", "/User/InvitationReply", {
        projectid: value,
        Username: invitee.username,
        Role: "Editor",
        IsAccepted: true,
      });
      expectEnvelope(res, 400, JSON.stringify(value));
      expect(res.body.message).toBe(`Invalid body: /projectID ${problem}.`);
    }
    expect(await invitations()).toEqual([id]);
    expectEnvelope(
      await as(invitee, "POST", "/User/InvitationReply", {
        projectID: String(id),
        Username: invitee.username,
        Role: "Editor",
        IsAccepted: true,
      }),
      200,
    );
    expect(await memberships()).toEqual([id]);

    for (const value of coerced(id)) {
      const res = await as(owner, "DELETE", "/user/removecollab", {
        PROJECTID: value,
        username: invitee.username,
      });
      expectEnvelope(res, 400, JSON.stringify(value));
      expect(res.body.message).toBe(`Invalid body: /projectID ${problem}.`);
    }
    expect(await memberships()).toEqual([id]);
  });
});

describe("a client that goes away mid-request", () => {
  // A second gateway on the shared system's bus, with the production default of taking the client's
  // address from the socket (the shared gateway believes X-Forwarded-For), a Redis prefix of its own (its
  // rate-limit counts are read below), and its log read by this test.
  let replica: ChildProcess | undefined;
  let replicaUrl: string;
  let output = "";
  const prefix = `test:${randomBytes(4).toString("hex")}:`;
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");

  beforeAll(async () => {
    const port = await freePort();
    replicaUrl = `http://127.0.0.1:${port}`;
    replica = spawn(process.execPath, serviceNodeArgs("gateway", [], testServiceCode()), {
      cwd: join(import.meta.dirname, ".."),
      env: {
        ...process.env,
        AMQP_URL: sys.amqpUrl,
        ...(sys.ipfsUrl ? { IPFS_API_URL: sys.ipfsUrl } : {}),
        REDIS_PREFIX: prefix,
        PORT: String(port),
        METRICS_PORT: "0",
        PUBLIC_BASE_URL: replicaUrl,
        LOG_LEVEL: "info",
        TRUST_PROXY: "false",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    replica.stdout?.on("data", (chunk) => (output += chunk));
    replica.stderr?.on("data", (chunk) => (output += chunk));
    // Said once it listens (a readiness poll would count against the rate limits read below).
    await waitFor(
      () => output.includes('"msg":"gateway listening"'),
      60_000,
      `the second gateway:\n${output}`,
    );
  });
  afterAll(async () => {
    if (replica) await stopProcess(replica);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  /** Writes a request, then half-closes the socket or destroys it; resolves once it closed. */
  function goAway(request: string, how: "end" | "destroy"): Promise<void> {
    const { hostname, port } = new URL(replicaUrl);
    return new Promise((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(request, () => (how === "end" ? socket.end() : socket.destroy()));
      });
      socket.on("error", () => undefined);
      socket.resume();
      socket.on("close", () => resolve());
    });
  }

  it("is counted by the rate limiter and logs no error (no TypeError); the gateway serves on", async () => {
    const auth = `Authorization: Bearer ${owner.token}`;
    const invite = JSON.stringify({ projectID: project.projectID, username: "nobody-here", role: "Editor" });
    const requests: [string, string][] = [
      [`GET /user/get HTTP/1.1\r\nHost: x\r\n${auth}\r\n\r\n`, "127.0.0.1"],
      [`GET /Project/Get/${project.projectID} HTTP/1.1\r\nHost: x\r\n${auth}\r\n\r\n`, "127.0.0.1"],
      [
        `PUT /User/Invite HTTP/1.1\r\nHost: x\r\n${auth}\r\nContent-Type: application/json\r\nContent-Length: ${invite.length}\r\n\r\n${invite}`,
        "127.0.0.1",
      ],
      [
        `GET /Authentication/GetNonce/${owner.wallet.address} HTTP/1.1\r\nHost: x\r\n${auth}\r\n\r\n`,
        "GET/Authentication/GetNonce/:address-127.0.0.1",
      ],
    ];
    const expected = new Map<string, number>();
    for (const [request, key] of requests) {
      for (const how of ["end", "destroy"] as const) await goAway(request, how);
      expected.set(key, (expected.get(key) ?? 0) + 2);
    }
    const errors = () => output.split("\n").filter((line) => /"level":"(error|fatal)"|TypeError/.test(line));
    const allCounted = async () => {
      for (const [key, n] of expected)
        if (Number((await redis.get(`${prefix}rl:${key}`)) ?? 0) !== n) return false;
      return true;
    };
    // Every request went past the rate limit, or one of them failed there.
    await waitFor(async () => errors().length > 0 || (await allCounted()), 20_000, "the requests' counts");
    expect(errors()).toEqual([]);

    const me = await fetch(`${replicaUrl}/user/get`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: { id: number } }).data.id).toBe(owner.id);
    expect(errors()).toEqual([]);
  });
});

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { type AmqpBus, createAmqpBus } from "@fundraise/bus";
import { waitFor } from "@fundraise/bus/testing";
import { findStory, journalWriter } from "@fundraise/journal";
import { errors, UsersEvents } from "@fundraise/protocol";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main as dlq } from "../packages/journal/src/cli/dlq.ts";
import { main as replay } from "../packages/journal/src/cli/replay.ts";
import { createClient } from "./client.ts";
import { dumpJournal, textOf } from "./journal-kit.ts";
import { createPeople, expectEnvelope, hexOf, newContent } from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// Debugging from the bus, as an engineer would on the running system (ADR 0034): a profile update whose
// `users.user.account-changed` one consumer fails twice and then handles, and another dead-letters. The
// request's story (`pnpm replay -- --request`) shows the HTTP request, the RPCs, the event and both
// consumers' attempts in causal order; `pnpm dlq` shows the dead letter with its error; once the fault is
// gone, the re-drive delivers it once. The two consumers are this file's own, on the system's broker,
// through the same bus library the services use.
const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
let sys: SharedSystem;
const client = createClient(() => sys);
let consumers: AmqpBus;

const FLAKY = "e2e-flaky";
const BROKEN = "e2e-broken";
const BROKEN_QUEUE = `${BROKEN}.${UsersEvents.accountChanged.name}`;
/** The user whose events the consumers fail on; others' events (other files) are handled at once. */
let target = -1;
let broken = true;
const flakyAttempts = new Map<string, number>();
const handledByBroken = new Map<string, number>();

beforeAll(async () => {
  sys = await sharedSystem();
  consumers = await createAmqpBus({
    url: sys.amqpUrl,
    service: "e2e",
    logger: pino({ level: "silent" }),
    journal: journalWriter(),
  });
  await consumers.subscribe(
    FLAKY,
    UsersEvents.accountChanged,
    async ({ userId }, ctx) => {
      if (userId !== target) return;
      const attempt = (flakyAttempts.get(ctx.messageId) ?? 0) + 1;
      flakyAttempts.set(ctx.messageId, attempt);
      if (attempt <= 2) throw new Error(`search index unreachable (attempt ${attempt})`);
    },
    { retryDelayMs: 200 },
  );
  await consumers.subscribe(BROKEN, UsersEvents.accountChanged, async ({ userId }, ctx) => {
    if (userId !== target) return;
    if (broken) throw errors.validation("E2E_BROKEN", "this consumer cannot read the event yet");
    handledByBroken.set(ctx.messageId, (handledByBroken.get(ctx.messageId) ?? 0) + 1);
  });
});

afterAll(async () => {
  await consumers?.close();
});

/** A CLI of the repository as an engineer runs it: a process of its own, against the system's broker. */
async function command(script: "replay" | "dlq", args: string[]) {
  const entry = join(root, "packages/journal/src/cli", `${script}.ts`);
  const { stdout } = await run(process.execPath, ["--import", "tsx", entry, ...args], {
    cwd: root,
    env: { ...process.env, AMQP_URL: sys.amqpUrl },
    timeout: 60_000,
  });
  return { stdout };
}

/** The same CLI called in this process (its `main`), which the rest of the file uses: no start-up each time. */
async function cli(script: "replay" | "dlq", args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (text: string) => out.push(text), err: (text: string) => err.push(text) };
  const code = await (script === "replay" ? replay : dlq)([...args, "--url", sys.amqpUrl], io);
  if (code !== 0) throw new Error(`${script} ${args.join(" ")} exited ${code}: ${err.join("")}`);
  return { stdout: out.join("") };
}

const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown> & { summary?: Record<string, unknown> });

describe("debugging from the bus", () => {
  it("a request's story shows the HTTP request, RPCs, the event and each consumer's attempts; the dead letter is shown and re-driven once", async () => {
    const { wallet, userId } = await client.signedUpUser();
    target = userId;
    const token = await client.tokenOf(wallet);
    const updated = await client.api("PUT", "/user/update", { token, body: { surname: "Debugged" } });
    expectEnvelope(updated, 200, "profile update");
    const requestId = String(updated.headers.get("x-request-id"));

    // Both consumers are done with it: the flaky one's third attempt, the broken one's dead letter.
    await waitFor(
      async () => {
        const { entries } = await findStory({ url: sys.amqpUrl, requestId });
        const outcomes = entries.filter((e) => e.kind === "delivery").map((e) => e.summary);
        return (
          outcomes.some((s) => s?.consumer === FLAKY && s.attempt === 3 && s.outcome === "acked") &&
          outcomes.some((s) => s?.consumer === BROKEN && s.outcome === "dead-lettered")
        );
      },
      60_000,
      "both consumers' outcomes in the journal",
    );

    const story = jsonLines((await cli("replay", ["--request", requestId, "--json"])).stdout);
    const byId = new Map(story.map((record) => [record.id, record]));
    const parentOf = (record: Record<string, unknown>) => byId.get(record.parent as string);
    const [top] = story;
    expect(top).toMatchObject({
      kind: "http",
      name: "PUT /user/update",
      depth: 0,
      summary: { status: 200 },
    });
    const update = story.find((r) => r.kind === "rpc-request" && r.name === "users.user.update");
    expect(update && parentOf(update)).toBe(top);
    expect(story.some((r) => r.kind === "rpc-reply" && r.parent === update?.id)).toBe(true);
    // The trigger's event belongs to the update that wrote it.
    const event = story.find((r) => r.kind === "event" && r.name === UsersEvents.accountChanged.name);
    expect(event && parentOf(event)).toBe(update);
    const deliveries = story.filter((r) => r.kind === "delivery" && r.parent === event?.id);
    const attempts = (consumer: string) =>
      deliveries
        .filter((d) => d.summary?.consumer === consumer)
        .map((d) => `${d.summary?.attempt} ${d.summary?.outcome}`);
    expect(attempts(FLAKY)).toEqual(["1 retried", "2 retried", "3 acked"]);
    expect(attempts(BROKEN)).toEqual(["1 dead-lettered"]);
    expect(attempts("auth")).toEqual(["1 acked"]);
    const flaky = deliveries.find((d) => d.summary?.consumer === FLAKY);
    expect(flaky?.summary?.error).toMatchObject({ message: "Error: search index unreachable (attempt 1)" });
    // Causal order: every record comes after its parent, and siblings in time order.
    story.forEach((record, i) => {
      if (record.parent !== null) expect(story.indexOf(parentOf(record) as never)).toBeLessThan(i);
    });
    const times = deliveries
      .filter((d) => d.summary?.consumer === FLAKY)
      .map((d) => Date.parse(d.at as string));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    const tree = (await command("replay", ["--request", requestId])).stdout;
    expect(tree).toMatch(/^PUT \/user\/update 200/);
    expect(tree).toMatch(/e2e-flaky\s+#1 retried/);
    expect(tree).toMatch(/e2e-broken\s+#1 dead-lettered/);

    // The dead letter, with its error, left where it is.
    const shown = jsonLines((await cli("dlq", ["show", BROKEN_QUEUE, "--json"])).stdout);
    const letter = shown.find((l) => l.messageId === event?.id);
    expect(letter).toMatchObject({
      requestId,
      attempts: 1,
      lastError: {
        kind: "validation",
        code: "E2E_BROKEN",
        message: "this consumer cannot read the event yet",
      },
    });
    const listed = jsonLines((await cli("dlq", ["--json"])).stdout).find(
      (q) => q.queue === `${BROKEN_QUEUE}.dlq`,
    );
    expect(listed).toMatchObject({ consumer: BROKEN, depth: expect.any(Number) });
    expect(Number(listed?.depth)).toBeGreaterThanOrEqual(1);

    // The fault is fixed: the re-drive delivers it, once.
    broken = false;
    const redriven = jsonLines(
      (await cli("dlq", ["redrive", BROKEN_QUEUE, "--id", String(event?.id), "--json"])).stdout,
    );
    expect(redriven).toEqual([{ messageId: event?.id, target: BROKEN_QUEUE, action: "moved" }]);
    await waitFor(() => handledByBroken.get(String(event?.id)) === 1, 30_000, "the re-driven event handled");
    // And only once: the story gains the re-driven delivery, and nothing else arrives.
    await waitFor(
      async () => {
        const { entries } = await findStory({ url: sys.amqpUrl, requestId });
        return entries.some(
          (e) => e.kind === "delivery" && e.summary?.consumer === BROKEN && e.summary.outcome === "acked",
        );
      },
      30_000,
      "the re-driven delivery in the story",
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(handledByBroken.get(String(event?.id))).toBe(1);
    expect(
      jsonLines((await cli("dlq", ["show", BROKEN_QUEUE, "--json"])).stdout).map((l) => l.messageId),
    ).not.toContain(event?.id);
  });
});

// The journal keeps every bus message for days: it must keep nothing personal. A person signs up, signs in,
// is made a co-owner and lists the co-owners, changes their e-mail and names, and deletes the account; the
// journal, read whole afterwards, holds none of their e-mail addresses, names, sign-in nonces or the
// address they called from.
const people = createPeople(() => sys, client);

describe("nothing personal in the journal", () => {
  it("sign-up, sign-in, co-owners, profile change and deletion leave no e-mail, name, nonce or client IP", async () => {
    const owner = await people.newUser("Base");
    const wallet = client.newWallet();
    const tag = Math.random().toString(36).slice(2, 8);
    const surname = `Privatus${tag}`;
    const mailAddress = `private.${tag}@example.org`;
    const signUp = await client.api("POST", "/Authentication/Register", {
      body: {
        Name: `Primus${tag}`,
        Surname: surname,
        Username: `private_${tag}`,
        MailAddress: mailAddress,
        SignedMessage: await wallet.signMessage("REGISTER"),
      },
    });
    expectEnvelope(signUp, 201, "sign-up");
    expect((await client.verifyFromMail(mailAddress)).status).toBe(200);

    const nonces: string[] = [];
    const signIn = async () => {
      const nonce = await client.api("GET", `/Authentication/GetNonce/${wallet.address}`);
      nonces.push(String(nonce.body.data));
      const login = await client.api("POST", "/Authentication/Login", {
        body: {
          address: wallet.address,
          signedMessage: await wallet.signMessage(`LOGIN: ${nonce.body.data}`),
        },
      });
      expectEnvelope(login, 200, "sign-in");
      return login.body.data as string;
    };
    const token = await signIn();

    const content = newContent("privacy");
    const added = await client.api("POST", "/Project/Add", {
      token: owner.token,
      body: { fileHex: hexOf(content.file), projectName: `Private ${tag}`, projectDescription: "p" },
    });
    expectEnvelope(added, 201, "add");
    const projectID = (added.body.data as { projectID: number }).projectID;
    const invite = await client.api("POST", "/user/invite", {
      token: owner.token,
      body: { projectID, username: `private_${tag}`, role: "Co-Owner" },
    });
    expectEnvelope(invite, 201, "invite");
    const accept = await client.api("PUT", "/user/invitationreply", {
      token,
      body: { projectID, isAccepted: true },
    });
    expectEnvelope(accept, 200, "accept");
    const coOwners = await client.api("GET", `/user/getcoowners/${projectID}`, { token });
    expectEnvelope(coOwners, 200, "co-owners");
    expect(JSON.stringify(coOwners.body.data)).toContain(mailAddress);
    expectEnvelope(
      await client.api("DELETE", "/user/removecollab", {
        token,
        body: { projectID, username: `private_${tag}` },
      }),
      200,
      "leave the project",
    );

    const newMail = `moved.${tag}@example.org`;
    const update = await client.api("PUT", "/user/update", {
      token,
      body: { name: `Secundus${tag}`, surname: `Novus${tag}`, mailAddress: newMail },
    });
    expectEnvelope(update, 200, "profile update");
    expect((await client.verifyFromMail(newMail)).status).toBe(200);
    const deletion = await client.api("DELETE", "/user/delete", { token: await signIn() });
    expectEnvelope(deletion, 200, "deletion");

    // Everything the deletion caused is journaled: each consumer's handling of users.user.deleted.
    const userId = Number(signUp.body.data);
    let entries: Awaited<ReturnType<typeof dumpJournal>> = [];
    await waitFor(
      async () => {
        entries = await dumpJournal(sys.amqpUrl);
        const deleted = entries.find(
          (e) =>
            e.kind === "event" && e.name === "users.user.deleted" && textOf(e).includes(`"userId":${userId}`),
        );
        return entries.filter((e) => e.kind === "delivery" && e.messageId === deleted?.id).length >= 2;
      },
      60_000,
      "the deletion's deliveries in the journal",
    );
    const ownEntries = entries.filter((e) => e.requestId !== undefined);
    expect(ownEntries.length).toBeGreaterThan(20);
    const text = entries.map(textOf).join("\n");
    const secrets = [
      mailAddress,
      newMail,
      owner.username && `${owner.username}@example.org`,
      surname,
      `Novus${tag}`,
    ];
    for (const secret of secrets) expect(text.toLowerCase()).not.toContain(secret.toLowerCase());
    for (const nonce of nonces) expect(text).not.toMatch(new RegExp(`\\b${nonce}\\b`));
    expect(text).not.toContain(client.ip);
    // What the journal keeps instead: the same pseudonym for the same person, in the calls that named them.
    expect(text).toMatch(/\[email:[\w-]{16}\]/);
    expect(text).toMatch(/\[ip:[\w-]{16}\]/);
    expect(text).toContain("[nonce]");
  });
});

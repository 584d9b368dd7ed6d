import { waitFor } from "@fundraise/bus/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { dumpJournal, textOf } from "./journal-kit.ts";
import { createPeople, expectEnvelope, hexOf, newContent } from "./projects-kit.ts";
import { type SharedSystem, sharedSystem } from "./shared.ts";

// The journal keeps every bus message for days (ADR 0034): it must keep nothing personal. A person signs
// up, signs in, is made a co-owner and lists the co-owners, changes their e-mail and names, and deletes the
// account; the journal, read whole afterwards, holds none of their e-mail addresses, names, sign-in nonces
// or the address they called from.
let sys: SharedSystem;
const client = createClient(() => sys);
const people = createPeople(() => sys, client);

beforeAll(async () => {
  sys = await sharedSystem();
});

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

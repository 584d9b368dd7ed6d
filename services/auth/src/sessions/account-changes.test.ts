import { testMessageContext } from "@fundraise/bus/testing";
import { SESSION_VERSION_CLAIM } from "@fundraise/protocol";
import { describe, expect, it, vi } from "vitest";
import { authOnMemory, newOrigin, newWallet } from "../test/memory-auth.ts";
import { createAccountChanges } from "./account-changes.ts";

// What the users service's account changes do in the auth service (rules.md §2.14): the session, the
// sign-in copy of the account, the verification links, on memory (test/memory-auth.ts). The events over
// RabbitMQ and the stores in Redis and Postgres are the integration suites' (rpc/keys-and-sessions.int.test.ts).

async function setup() {
  const h = await authOnMemory();
  const changes = createAccountChanges({
    sessions: h.sessions,
    accounts: h.accounts,
    signUp: h.signUp,
    consumer: "auth",
  });
  const wallet = newWallet();
  const user = h.users.seed(wallet.address, { version: 1 });
  const signIn = async () => {
    const origin = newOrigin();
    const nonce = await h.signIn.issueNonce(wallet.address, origin);
    const signedMessage = await wallet.signMessage(`LOGIN: ${nonce}`);
    return h.claimsOf(
      await h.signIn.login({ address: wallet.address, signedMessage }, origin, testMessageContext()),
    );
  };
  await signIn();
  return {
    h,
    changes,
    wallet,
    user,
    signIn,
    copied: () => h.accounts.kept.has(wallet.address.toLowerCase()),
  };
}

describe("account changes", () => {
  it("an admin's role change: the copy goes, older tokens are revoked, the next sign-in carries the new role", async () => {
    const { h, changes, wallet, user, signIn, copied } = await setup();
    expect(copied()).toBe(true);
    const { version } = h.users.changeRole(wallet.address, "Viewer");
    await changes.roleChanged(
      {
        userId: user.id,
        address: wallet.address,
        role: "Viewer",
        previousRole: "Base",
        changedBy: "1",
        version,
      },
      testMessageContext(),
    );
    expect(copied()).toBe(false);
    expect(h.sessions.states.get(user.id)).toEqual({
      role: "Viewer",
      version,
      revokedBelow: version,
      deleted: false,
    });
    expect(await signIn()).toMatchObject({ role: "Viewer", [SESSION_VERSION_CLAIM]: version });
  });

  it("a change the chain made only moves the role: tokens already out stay valid", async () => {
    const { h, changes, wallet, user } = await setup();
    await changes.roleChanged(
      {
        userId: user.id,
        address: wallet.address,
        role: "Whitelist",
        previousRole: "Base",
        changedBy: "chain",
        version: 2,
      },
      testMessageContext(),
    );
    expect(h.sessions.states.get(user.id)).toEqual({
      role: "Whitelist",
      version: 2,
      revokedBelow: 0,
      deleted: false,
    });
  });

  it("an older change arriving after a newer one changes nothing; an event without a version only drops the copy", async () => {
    const { h, changes, wallet, user, copied } = await setup();
    const event = { userId: user.id, address: wallet.address, previousRole: "Base" as const, changedBy: "1" };
    await changes.roleChanged({ ...event, role: "Viewer", version: 3 }, testMessageContext());
    await changes.roleChanged({ ...event, role: "Whitelist", version: 2 }, testMessageContext());
    expect(h.sessions.states.get(user.id)).toEqual({
      role: "Viewer",
      version: 3,
      revokedBelow: 3,
      deleted: false,
    });
    await h.accounts.byAddress(wallet.address, testMessageContext());
    await changes.roleChanged({ ...event, role: "Admin" }, testMessageContext());
    expect(copied()).toBe(false);
    expect(h.sessions.states.get(user.id)?.role).toBe("Viewer");
  });

  it("a deleted user: the session refuses every token, the copy and the verification links go, once", async () => {
    const { h, changes, wallet, user, copied } = await setup();
    await changes.emailChanged(
      { userId: user.id, address: wallet.address, mailAddress: "new@example.org" },
      testMessageContext(),
    );
    expect(h.verifications.verifications.size).toBe(1);
    const ctx = testMessageContext();
    await changes.deleted({ userId: user.id, address: wallet.address, version: 2 }, ctx);
    await changes.deleted({ userId: user.id, address: wallet.address, version: 2 }, ctx);
    expect(h.sessions.states.get(user.id)).toEqual({
      role: null,
      version: 2,
      revokedBelow: 2,
      deleted: true,
    });
    expect(copied()).toBe(false);
    expect(h.verifications.verifications.size).toBe(0);
  });

  it("a changed e-mail: the copy goes and the new address gets a link, once per message", async () => {
    const { h, changes, wallet, user, copied } = await setup();
    const markDuplicate = vi.fn();
    const ctx = testMessageContext({ markDuplicate });
    const event = { userId: user.id, address: wallet.address, mailAddress: "ada.new@example.org" };
    await changes.emailChanged(event, ctx);
    await changes.emailChanged(event, ctx);
    expect(copied()).toBe(false);
    expect(h.mailer.sent.filter((m) => m.to === "ada.new@example.org")).toMatchObject([
      { reason: "email-changed" },
    ]);
    expect(markDuplicate).toHaveBeenCalledOnce();
  });
});

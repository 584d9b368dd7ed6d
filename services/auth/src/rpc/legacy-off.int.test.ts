import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { AuthRpc } from "@fundraise/protocol";
import { simpleParser } from "mailparser";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_FAILED_MESSAGE } from "../sign-in/sign-in.service.ts";
import { VERIFIED_MESSAGE } from "../sign-up/sign-up.service.ts";
import {
  failureOf,
  type Harness,
  legacyLogin,
  newWallet,
  origin,
  siweMessage,
  startHarness,
  verifyToken,
} from "../test/harness.ts";
import { verificationLinkIn } from "../test/smtp.ts";

// A deployment that refuses the legacy texts (LEGACY_MESSAGES=false) and has no SMTP server (mail is
// written to files), with the real users service.
let h: Harness;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  h = await startHarness({ LEGACY_MESSAGES: "false", SMTP_URL: "" }, { log: pino({ level: "debug" }, sink) });
});

afterAll(async () => {
  await h?.close();
});

describe("legacy messages switched off, mail to files", () => {
  it("refuses `LOGIN: <nonce>` with the one 401 and accepts SIWE", async () => {
    const wallet = newWallet();
    await h.users.seed({ address: wallet.address });
    expect(await failureOf(legacyLogin(h, wallet))).toMatchObject({
      code: "LOGIN_FAILED",
      message: LOGIN_FAILED_MESSAGE,
    });
    const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const message = siweMessage(h, wallet.address, nonce);
    const token = await h.client.call(AuthRpc.login, {
      login: { address: wallet.address, signedMessage: await wallet.signMessage(message), message },
      origin,
    });
    expect((await verifyToken(h, token)).claims.address).toBe(wallet.address);
  });

  it("refuses a `REGISTER` signature with 400, registers with SIWE, and writes the mail to MAIL_DIR", async () => {
    const wallet = newWallet();
    const fields = {
      name: "Grace",
      surname: "Hopper",
      username: "grace_h",
      mailAddress: "grace@example.org",
    };
    const legacy = await failureOf(
      h.client.call(AuthRpc.register, {
        register: { ...fields, signedMessage: await wallet.signMessage("REGISTER") },
        origin,
      }),
    );
    expect(legacy).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(legacy.message).toContain("message");
    // `REGISTER: <nonce>` is a legacy text too (no domain, nothing a wallet can check): refused as well,
    // and its nonce is left alone.
    const registerNonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const withNonce = await failureOf(
      h.client.call(AuthRpc.register, {
        register: {
          ...fields,
          signedMessage: await wallet.signMessage(`REGISTER: ${registerNonce}`),
          message: `REGISTER: ${registerNonce}`,
        },
        origin,
      }),
    );
    expect(withNonce).toMatchObject({ kind: "validation", code: "VALIDATION_FAILED" });
    expect(withNonce.message).toContain("message");
    expect(await h.users.byAddress(wallet.address)).toBeNull();

    const nonce = await h.client.call(AuthRpc.nonce, { address: wallet.address, origin });
    const message = siweMessage(h, wallet.address, nonce);
    const id = await h.client.call(AuthRpc.register, {
      register: { ...fields, signedMessage: await wallet.signMessage(message), message },
      origin,
    });
    const dir = h.config.mail.dir;
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    const file = join(dir, files[0] ?? "");
    const mail = await simpleParser(await readFile(file));
    const link = verificationLinkIn({
      from: undefined,
      to: [],
      subject: mail.subject,
      text: mail.text ?? "",
      html: "",
    });
    expect(link.email).toBe(fields.mailAddress);
    expect(await h.client.call(AuthRpc.verifyEmail, { email: link.email, token: link.token })).toBe(
      VERIFIED_MESSAGE,
    );
    expect(await h.users.byAddress(wallet.address)).toMatchObject({ id: Number(id), isVerified: true });

    // The log says where the mail is, never the link or the token.
    const log = logLines.join("");
    expect(log).toContain(file);
    expect(log).not.toContain(link.token);
    expect(log).not.toContain("verify-email?");
  });
});

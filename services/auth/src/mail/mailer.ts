import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@fundraise/service-kit";
import nodemailer from "nodemailer";

export interface VerificationMail {
  to: string;
  /** The full verification link; it holds the token, so it is never logged. */
  link: string;
  /** Greeting name. */
  name: string;
  /** A first sign-up, or a changed address. */
  reason: "register" | "email-changed";
  validHours: number;
}

export interface Mailer {
  /** Sends the mail; rejects when the server refuses it or cannot be reached. */
  sendVerification(mail: VerificationMail): Promise<void>;
  close(): void;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Subject, text and a small HTML part, all saying the same thing. */
export function renderVerificationMail(mail: VerificationMail): {
  subject: string;
  text: string;
  html: string;
} {
  const subject =
    mail.reason === "register" ? "Verify your e-mail address" : "Verify your new e-mail address";
  const intro =
    mail.reason === "register"
      ? "Thank you for signing up. Follow this link to verify your e-mail address:"
      : "Your e-mail address was changed. Follow this link to verify the new address:";
  const hours = `${mail.validHours} hour${mail.validHours === 1 ? "" : "s"}`;
  const outro = `The link is valid for ${hours}. If you did not ask for this, ignore this mail.`;
  const text = `Hello ${mail.name},\n\n${intro}\n\n${mail.link}\n\n${outro}\n`;
  const html = `<!doctype html>
<html><body>
<p>Hello ${escapeHtml(mail.name)},</p>
<p>${escapeHtml(intro)}</p>
<p><a href="${escapeHtml(mail.link)}">Verify my e-mail address</a></p>
<p>${escapeHtml(outro)}</p>
</body></html>`;
  return { subject, text, html };
}

/**
 * Verification mail through SMTP (nodemailer) when `smtpUrl` is set; otherwise each mail is written as an
 * .eml file to `dir` and the log says which file (never the link or token: they are credentials).
 */
export function createMailer(options: {
  smtpUrl: string | undefined;
  dir: string;
  from: string;
  log: Logger;
}): Mailer {
  const { log } = options;
  if (options.smtpUrl) {
    // Bounded, so a dead mail server cannot hold Register past its RPC deadline (20 s). Pooled: a mail
    // goes over an open connection (MAIL, RCPT, DATA), not a new one each (connect, greeting, EHLO, …, QUIT).
    const transport = nodemailer.createTransport({
      url: options.smtpUrl,
      pool: true,
      connectionTimeout: 5_000,
      greetingTimeout: 5_000,
      socketTimeout: 10_000,
    });
    return {
      async sendVerification(mail) {
        const content = renderVerificationMail(mail);
        await transport.sendMail({ from: options.from, to: mail.to, ...content });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  log.info({ mailDir: options.dir }, "SMTP_URL is unset: verification mail is written as .eml files");
  return {
    async sendVerification(mail) {
      const content = renderVerificationMail(mail);
      const info = await transport.sendMail({ from: options.from, to: mail.to, ...content });
      await mkdir(options.dir, { recursive: true });
      const file = join(options.dir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomUUID()}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600 });
      log.info({ file }, "verification mail written to a file (SMTP_URL is unset)");
    },
    close: () => transport.close(),
  };
}

import type { Socket } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string | undefined;
  to: string[];
  subject: string | undefined;
  text: string;
  html: string;
}

export interface TestSmtpServer {
  /** smtp://127.0.0.1:<port>, for SMTP_URL. */
  url: string;
  received: ReceivedMail[];
  /** While true, every recipient is refused with 550 (the mail-failure path). */
  refuse: boolean;
  /** Closes every open client connection, as a restarting or idle-closing mail server does. */
  dropConnections(): void;
  /** Client connections accepted so far. */
  readonly connections: number;
  /** Waits until a mail to `to` arrived after `seen` others, and returns it. */
  next(to: string, seen?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** A real SMTP server (smtp-server) that parses what it receives (mailparser), on a free loopback port. */
export async function startTestSmtpServer(): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const state = { refuse: false };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (state.refuse) {
        const error = new Error("mailbox unavailable") as Error & { responseCode: number };
        error.responseCode = 550;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail: ParsedMail) => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: mail.subject,
            text: mail.text ?? "",
            html: typeof mail.html === "string" ? mail.html : "",
          });
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  const sockets = new Set<Socket>();
  let connections = 0;
  server.server.on("connection", (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get refuse() {
      return state.refuse;
    },
    set refuse(value: boolean) {
      state.refuse = value;
    },
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    get connections() {
      return connections;
    },
    async next(to, seen = 0) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const mail = received.filter((m) => m.to.some((r) => r.toLowerCase() === to.toLowerCase()))[seen];
        if (mail) return mail;
        if (Date.now() > deadline) throw new Error(`no mail for ${to} arrived`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The verification link in a mail's text part, with its query decoded. */
export function verificationLinkIn(mail: ReceivedMail): { url: URL; email: string; token: string } {
  const match = /(https?:\/\/\S+\/Authentication\/verify-email\?\S+)/.exec(mail.text);
  if (!match?.[1]) throw new Error(`no verification link in: ${mail.text}`);
  const url = new URL(match[1]);
  return { url, email: url.searchParams.get("email") ?? "", token: url.searchParams.get("token") ?? "" };
}

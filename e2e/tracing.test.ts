import { createServer, type Server } from "node:http";
import { waitFor } from "@fundraise/bus/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { type System, startSystem } from "./system.ts";

// Tracing across processes: users, auth and the gateway run with OTEL_EXPORTER_OTLP_ENDPOINT set to an
// OTLP/HTTP receiver in this process (http/json), and a request's spans are read back from what they
// exported: one trace from the gateway's HTTP span through the RPC to the service, and on to the
// consumer of the event the service's write published through its outbox.

/** A span as an OTLP/JSON export carries it, with the service that exported it. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** OTLP span kinds. */
const Kind = { SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
}

const otlpValue = (value: OtlpValue) =>
  value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue ?? null;
const attributesOf = (list: OtlpAttribute[] | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, otlpValue(value)]));

/** A real OTLP/HTTP trace receiver: POST /v1/traces in JSON, every span kept. */
async function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (
        req.method !== "POST" ||
        req.url !== "/v1/traces" ||
        !req.headers["content-type"]?.includes("json")
      ) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"]);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  // Port 0: the kernel's choice, held from the start (a port found free, closed, then taken is a race
  // with every outgoing connection's ephemeral port).
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let sys: System;

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({
    services: ["users", "auth", "gateway"],
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    },
  });
});

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
});

const { api, signedUpUser, tokenOf } = createClient(() => sys);

/** The spans of one trace. */
const traceOf = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);

/** The chain of parents of `span` within its trace, nearest first. */
function ancestorsOf(span: ReceivedSpan): ReceivedSpan[] {
  const chain: ReceivedSpan[] = [];
  let parentId = span.parentSpanId;
  while (parentId) {
    const parent = receiver.spans.find((s) => s.traceId === span.traceId && s.spanId === parentId);
    if (!parent) break;
    chain.push(parent);
    parentId = parent.parentSpanId;
  }
  return chain;
}

/** The gateway's HTTP server span of the request to `path` (the root of its trace). */
function gatewayRequestSpan(method: string, path: string): ReceivedSpan | undefined {
  return receiver.spans.find(
    (span) =>
      span.service === "fundraise-gateway" &&
      span.kind === Kind.SERVER &&
      span.parentSpanId === "" &&
      (span.attributes["http.request.method"] ?? span.attributes["http.method"]) === method &&
      Object.values(span.attributes).some((value) => typeof value === "string" && value.endsWith(path)),
  );
}

describe("tracing: OTLP from the running system", () => {
  it("one trace per request: gateway HTTP span → RPC client → the service's RPC server span → its queries, and on to the event's consumer", async () => {
    const { wallet } = await signedUpUser();
    const token = await tokenOf(wallet);
    const mailAddress = `changed_${Date.now()}@example.org`;
    const res = await api("PUT", "/user/update", { token, body: { mailAddress } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // The auth service consumes the users service's emailChanged and mails the new address its link.
    await sys.mailbox.next(mailAddress);

    // The gateway's span of the PUT, with the whole trace exported: the users service's RPC server span
    // and the auth service's consumer span.
    let root: ReceivedSpan | undefined;
    await waitFor(
      () => {
        root = gatewayRequestSpan("PUT", "/user/update");
        if (!root) return false;
        const spans = traceOf(root.traceId);
        return (
          spans.some((s) => s.service === "fundraise-users" && s.kind === Kind.SERVER) &&
          spans.filter((s) => s.service === "fundraise-auth" && s.kind === Kind.CONSUMER).length === 2
        );
      },
      20_000,
      "the PUT's trace to reach the receiver",
    );
    const request = root as ReceivedSpan;
    const spans = traceOf(request.traceId);

    // Gateway → users: the RPC server span's parent is the gateway's RPC client span, itself inside the
    // gateway's HTTP request span.
    const server = spans.find((s) => s.service === "fundraise-users" && s.kind === Kind.SERVER);
    const client = spans.find((s) => s.spanId === server?.parentSpanId);
    expect(client, JSON.stringify(spans, null, 1)).toMatchObject({
      service: "fundraise-gateway",
      kind: Kind.CLIENT,
      name: server?.name,
      attributes: { "rpc.system": "fundraise-bus", "rpc.service": "users" },
    });
    expect(ancestorsOf(client as ReceivedSpan).at(-1)?.spanId).toBe(request.spanId);
    // The service's own work is inside its span: its Postgres queries (the pg instrumentation).
    expect(
      spans.some(
        (s) =>
          s.service === "fundraise-users" &&
          s.kind === Kind.CLIENT &&
          String(s.attributes["db.system.name"] ?? s.attributes["db.system"]).startsWith("postgres") &&
          ancestorsOf(s).includes(server as ReceivedSpan),
      ),
      "a Postgres span under the users service's RPC span",
    ).toBe(true);

    // Users → outbox → relay → auth: the consumer continues the write's trace; its parent is the publish
    // of the row, whose parent is the RPC span that wrote it.
    const consumer = spans.find(
      (s) => s.service === "fundraise-auth" && s.name === "process users.user.email-changed",
    );
    expect(consumer?.name).toBe("process users.user.email-changed");
    const publish = spans.find((s) => s.spanId === consumer?.parentSpanId);
    expect(publish).toMatchObject({ service: "fundraise-users", kind: Kind.PRODUCER });
    expect(ancestorsOf(publish as ReceivedSpan)).toContain(server);
    expect(ancestorsOf(consumer as ReceivedSpan).at(-1)?.spanId).toBe(request.spanId);
    // So does the consumer of the row the users table's trigger wrote in the same transaction (no enqueue:
    // the outbox's headers default to the transaction's traceparent).
    const accountChanged = spans.find(
      (s) => s.service === "fundraise-auth" && s.name === "process users.user.account-changed",
    );
    expect(ancestorsOf(accountChanged as ReceivedSpan)).toContain(server);

    // One trace per request: every span of the users RPC and of the consumer belongs to this one, and the
    // sign-in before it is a trace of its own.
    expect(spans.filter((s) => s.parentSpanId === "")).toEqual([request]);
    const login = gatewayRequestSpan("POST", "/Authentication/Login");
    expect(login?.traceId).toBeDefined();
    expect(login?.traceId).not.toBe(request.traceId);
    expect(
      traceOf(login?.traceId as string).some((s) => s.service === "fundraise-auth" && s.kind === Kind.SERVER),
    ).toBe(true);
  });
});

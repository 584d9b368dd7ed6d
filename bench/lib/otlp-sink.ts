/**
 * A local OTLP/HTTP trace receiver for benchmarks: answers POST /v1/traces at once and counts the spans,
 * in http/json or http/protobuf (the protobuf is walked, not decoded: ExportTraceServiceRequest field 1
 * → ResourceSpans field 2 → ScopeSpans field 2 is one Span each).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface OtlpSink {
  url: string;
  /** Spans received so far. */
  spans(): number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let spans = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      try {
        spans += req.headers["content-type"]?.includes("json") ? jsonSpans(body) : protobufSpans(body);
      } catch {
        // An export it cannot read is not counted; the exporter is answered all the same.
      }
      res.writeHead(200, { "content-type": req.headers["content-type"] ?? "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function jsonSpans(body: Buffer): number {
  const parsed = JSON.parse(body.toString("utf8")) as {
    resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[];
  };
  let count = 0;
  for (const r of parsed.resourceSpans ?? [])
    for (const s of r.scopeSpans ?? []) count += s.spans?.length ?? 0;
  return count;
}

/** The length-delimited fields numbered `field` of a protobuf message, as [start, end) of `buf`. */
function* fields(buf: Buffer, start: number, end: number, field: number): Generator<[number, number]> {
  let at = start;
  const varint = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = buf[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (at < end) {
    const key = varint();
    const wire = key & 7;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = varint();
      if (Math.floor(key / 8) === field) yield [at, at + length];
      at += length;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
}

function protobufSpans(body: Buffer): number {
  let count = 0;
  for (const [rs, re] of fields(body, 0, body.length, 1)) {
    for (const [ss, se] of fields(body, rs, re, 2)) for (const _ of fields(body, ss, se, 2)) count++;
  }
  return count;
}

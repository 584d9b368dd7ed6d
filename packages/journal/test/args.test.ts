import { describe, expect, it } from "vitest";
import { parseCli } from "../src/cli/args.ts";
import { main } from "../src/cli/replay.ts";

/** Runs the CLI in process: no broker is reached for a bad option, so none is needed. */
async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string[] }> {
  let out = "";
  let err = "";
  const code = await main(argv, { out: (text) => (out += text), err: (text) => (err += text) });
  return { code, out, err: err.split("\n").filter((line) => line !== "") };
}

describe("replay CLI arguments", () => {
  it("parses a plain read, ignoring the -- pnpm forwards", () => {
    const command = parseCli([
      "--",
      "--url",
      "amqp://u:p@h:1/v",
      "--from",
      "offset",
      "17",
      "--until",
      "20:3",
      "--key",
      "users.#",
      "--type",
      "event",
      "--limit",
      "3",
      "--republish",
      "--include-rpc",
      "--to-queue",
      "notifications.users.user.deleted",
      "--dry-run",
    ]);
    expect(command).toMatchObject({
      mode: "read",
      print: false,
      options: {
        url: "amqp://u:p@h:1/v",
        from: { offset: 17 },
        until: { offset: 20, index: 3 },
        key: "users.#",
        kind: "event",
        limit: 3,
        republish: true,
        includeRpc: true,
        allowWrites: false,
        toQueue: "notifications.users.user.deleted",
        dryRun: true,
        follow: false,
      },
    });
  });

  it("parses a story", () => {
    expect(parseCli(["--request", "0193a0f2-8e5c-7cc1-9b1e-3d1c2b4a5f60", "--json"])).toMatchObject({
      mode: "story",
      requestId: "0193a0f2-8e5c-7cc1-9b1e-3d1c2b4a5f60",
      json: true,
    });
    expect(parseCli(["--trace", "0193A0F28E5C7CC19B1E3D1C2B4A5F60"])).toMatchObject({
      mode: "story",
      traceId: "0193a0f28e5c7cc19b1e3d1c2b4a5f60",
      json: false,
    });
  });

  it("defaults to printing everything from the first entry; accepts http, --any-key and --idle-ms", () => {
    expect(parseCli([])).toMatchObject({ mode: "read", print: true, options: { republish: false } });
    expect(parseCli(["--key", "http"])).toMatchObject({ options: { key: "http" } });
    expect(parseCli(["--key", "POST /Project/Add"])).toMatchObject({ options: { key: "POST /Project/Add" } });
    expect(parseCli(["--key", "tests.#", "--any-key"])).toMatchObject({ options: { key: "tests.#" } });
    expect(parseCli(["--idle-ms", "500"])).toMatchObject({ notes: [expect.stringContaining("deprecated")] });
  });

  it("prints the help with every option and examples", async () => {
    const { code, out } = await cli("--help");
    expect(code).toBe(0);
    for (const option of [
      "--request",
      "--trace",
      "--json",
      "--from",
      "--until",
      "--key",
      "--any-key",
      "--type",
      "--limit",
      "--follow",
      "--print",
      "--url",
      "--republish",
      "--include-rpc",
      "--allow-writes",
      "--to-queue",
      "--dry-run",
      "--fresh-ids",
      "--include-replayed",
    ]) {
      expect(out).toContain(option);
    }
    expect(out).toContain("Examples");
  });

  it.each([
    [
      ["--from", "1795765180"],
      '--from "1795765180": looks like a time in epoch seconds, not an offset: write @1795765180000',
    ],
    [["--from", "2026-02-30T00:00:00Z"], '--from "2026-02-30T00:00:00Z": 2026-02 has 28 days, not 30'],
    [["--from", "2026-13-01"], '--from "2026-13-01": there is no month 13'],
    [
      ["--until", "2026-11-27T24:00:00Z"],
      '--until "2026-11-27T24:00:00Z": hour 24 is out of range (00 to 23)',
    ],
    [
      ["--from", "2026-11-27T10:00:00"],
      '--from "2026-11-27T10:00:00": has no time zone: add Z (UTC) or an offset such as +02:00',
    ],
    [["--from", "2999-01-01T00:00:00Z"], '--from "2999-01-01T00:00:00Z": is in the future'],
    [["--from", "-1h", "--until", "-2h"], "--until "],
    [["--from", "10", "--until", "offset:9"], "--until offset:9 is before --from offset:10"],
    [
      ["--key", "user.#"],
      '--key "user.#" matches no RPC or event name, nor http (or --any-key to read it anyway); known: auth.',
    ],
    [
      ["--type", "command"],
      '--type "command": expected one of http, rpc-request, rpc-reply, event, delivery',
    ],
    [["--request", "not valid!"], '--request "not valid!": a request id is 1 to 128 letters'],
    [["--trace", "abc"], '--trace "abc": a trace id is 32 hex digits'],
    [
      ["--trace", "0193a0f28e5c7cc19b1e3d1c2b4a5f6z"],
      '--trace "0193a0f28e5c7cc19b1e3d1c2b4a5f6z": a trace id is 32 hex digits',
    ],
    [["--request", "r1", "--republish"], "--request cannot be combined with --republish"],
    [
      ["--request", "r1", "--trace", "0193a0f28e5c7cc19b1e3d1c2b4a5f60"],
      "--request and --trace: give one of them",
    ],
    [["--trace", "0193a0f28e5c7cc19b1e3d1c2b4a5f60", "--follow"], "--trace cannot be combined with --follow"],
    [["--to-queue", "q"], "--to-queue needs --republish"],
    [["--dry-run"], "--dry-run needs --republish"],
    [["--include-rpc"], "--include-rpc needs --republish"],
    [["--republish", "--allow-writes"], "--allow-writes needs --include-rpc"],
    [["--limit", "0"], '--limit "0": expected a positive integer'],
    [["--bogus"], "Unknown option '--bogus'"],
    [["stray"], "unexpected argument: stray"],
  ])("exits 2 on %j with one line naming the problem", async (argv, line) => {
    const { code, out, err } = await cli(...argv);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err[0]).toContain(line);
    expect(err).toEqual([err[0], "See pnpm replay -- --help"]);
  });

  it("exits 1 with one line when the broker cannot be reached", async () => {
    const { code, err } = await cli("--url", "amqp://guest:guest@127.0.0.1:1/", "--from", "first");
    expect(code).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(/^cannot connect to amqp:\/\/guest:\*+@127\.0\.0\.1:1/);
  });
});

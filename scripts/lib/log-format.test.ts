import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { chooseLogFormat, createLineFormatter } from "./log-format.ts";

// That pnpm start refuses a bad LOG_FORMAT: start-servers.int.test.ts (it starts the command).

// Lines as the services write them (service-kit's createLogger): level label, ISO time, `service`.
const listening =
  '{"level":"info","time":"2026-11-22T11:25:01.123Z","service":"users","pid":7,"hostname":"box","msg":"users listening","queue":"users.rpc"}';
const failed = JSON.stringify({
  level: "error",
  time: "2026-11-22T11:25:02.000Z",
  service: "auth",
  msg: "request failed",
  err: { type: "Error", message: "boom", stack: "Error: boom\n    at handler (auth.ts:1:1)" },
});
const TIME = String.raw`\[\d{2}:\d{2}:\d{2}\.\d{3}\]`;

describe("chooseLogFormat (LOG_FORMAT)", () => {
  it("is pretty on a terminal and JSON otherwise when unset", () => {
    expect(chooseLogFormat(undefined, true)).toBe("pretty");
    expect(chooseLogFormat("", true)).toBe("pretty");
    expect(chooseLogFormat(undefined, false)).toBe("json");
  });

  it("keeps JSON on a terminal with LOG_FORMAT=json, and pretty-prints a pipe with LOG_FORMAT=pretty", () => {
    expect(chooseLogFormat("json", true)).toBe("json");
    expect(chooseLogFormat(" JSON ", true)).toBe("json");
    expect(chooseLogFormat("pretty", false)).toBe("pretty");
  });

  it("refuses anything else, naming the variable", () => {
    expect(() => chooseLogFormat("xml", true)).toThrow(/^LOG_FORMAT must be json or pretty/);
  });
});

describe("createLineFormatter", () => {
  it("turns a JSON line into one readable line: time, level, service, message, other fields", () => {
    const format = createLineFormatter({ format: "pretty", service: "users", width: 7, colorize: false });
    const line = format(listening);
    expect(line).not.toContain("\n");
    expect(line).toMatch(new RegExp(`^${TIME}  INFO: users   users listening \\{"queue":"users.rpc"\\}$`));
    // pid and hostname are noise on one machine; the service is in its column, not repeated.
    expect(line).not.toMatch(/pid|hostname|"service"/);
  });

  it("names the service a line says, else the process it came from", () => {
    const format = createLineFormatter({ format: "pretty", service: "gateway", colorize: false });
    expect(format(listening)).toMatch(/ INFO: users users listening/);
    expect(format('{"level":"warn","time":"2026-11-22T11:25:01.123Z","msg":"no service field"}')).toMatch(
      new RegExp(`^${TIME}  WARN: gateway no service field$`),
    );
  });

  it("colours on a terminal, with the same text underneath", () => {
    const plain = createLineFormatter({ format: "pretty", service: "users", colorize: false })(listening);
    const coloured = createLineFormatter({ format: "pretty", service: "users", colorize: true })(listening);
    expect(coloured).not.toBe(plain);
    expect(stripVTControlCharacters(coloured)).toBe(plain);
  });

  it("puts an error's stack under its event, indented", () => {
    const format = createLineFormatter({ format: "pretty", service: "auth", colorize: false });
    const [first, ...rest] = format(failed).split("\n");
    expect(first).toMatch(new RegExp(`^${TIME} ERROR: auth request failed$`));
    expect(rest).toEqual(["    err: Error: boom", "        at handler (auth.ts:1:1)"]);
  });

  it("prints a line that is not JSON as it is, after the process's name", () => {
    const format = createLineFormatter({ format: "pretty", service: "users", width: 7, colorize: false });
    expect(format("Debugger attached.")).toBe("users   Debugger attached.");
  });

  it("leaves every line untouched in the json format", () => {
    const format = createLineFormatter({ format: "json", service: "users", colorize: true });
    for (const line of [listening, failed, "not json"]) expect(format(line)).toBe(line);
  });
});

import Type from "typebox";
import { describe, expect, it } from "vitest";
import { AmqpEnv, ConfigError, DatabaseEnv, LogEnv, loadEnv } from "./config.ts";

const Env = {
  ...DatabaseEnv,
  ...AmqpEnv,
  ...LogEnv,
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
};

describe("loadEnv", () => {
  it("applies defaults and converts strings", () => {
    const env = loadEnv(Env, { PORT: "9090", BUS_JOURNAL: "false" });
    expect(env).toMatchObject({
      PORT: 9090,
      BUS_JOURNAL: false,
      LOG_LEVEL: "info",
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/fundraising",
    });
    expect(Object.isFrozen(env)).toBe(true);
  });

  it("names every bad variable in one error, without echoing values", () => {
    let error: unknown;
    try {
      loadEnv(Env, { PORT: "eighty", DATABASE_URL: "mysql://secret-password@x", LOG_LEVEL: "loud" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join("\n");
    expect(problems).toMatch(/^PORT /m);
    expect(problems).toMatch(/^DATABASE_URL /m);
    expect(problems).toMatch(/^LOG_LEVEL /m);
    expect((error as Error).message).not.toContain("secret-password");
  });

  it("reports a required variable that is missing", () => {
    expect(() => loadEnv({ SECRET: Type.String({ minLength: 1 }) }, {})).toThrow(/SECRET is required/);
  });
});

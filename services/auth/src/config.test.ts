import { ConfigError } from "@fundraise/service-kit";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.ts";

describe("loadConfig", () => {
  it("applies the defaults of rules.md §2", () => {
    const config = loadConfig({}, "/srv/app");
    expect(config.jwt).toEqual({ issuer: "fundraise-auth", audience: "fundraise", ttlSeconds: 7200 });
    expect(config.signIn).toMatchObject({
      nonceTtlSeconds: 300,
      legacyMessages: true,
      siweDomain: "localhost:8080",
    });
    expect(config.verification.ttlHours).toBe(24);
    expect(config.keys.rotationDays).toBe(30);
    expect(config.mail).toMatchObject({ smtpUrl: undefined, dir: "/srv/app/.local/mail" });
    expect(config.publicBaseUrl).toBe("http://localhost:8080");
    expect(config.chain.deploymentFile).toBe("/srv/app/.local/chain/deployment.json");
    expect(config.signIn.noncesPerAddress).toBe(10);
    // Per client IP and per IP + address, never per address alone (rules.md §7.3).
    expect(config.rateLimits).toEqual({
      noncePerIpPerMinute: 60,
      noncePerIpAddressPerMinute: 10,
      loginFailuresPerIpPerMinute: 30,
      loginFailuresPerIpAddressPerMinute: 10,
      // A campus signs up from behind one NAT (rules.md §9.4, ADR 0010).
      registerPerIpPerHour: 600,
      registerPerIpAddressPerHour: 5,
    });
  });

  it("converts strings and derives the SIWE domain from PUBLIC_BASE_URL", () => {
    const config = loadConfig({
      PUBLIC_BASE_URL: "https://Fundraise.Example/",
      LEGACY_MESSAGES: "false",
      TOKEN_TTL_SECONDS: "600",
      SMTP_URL: "smtp://mail.example:25",
    });
    expect(config.signIn.siweDomain).toBe("fundraise.example");
    expect(config.publicBaseUrl).toBe("https://fundraise.example");
    expect(config.signIn.legacyMessages).toBe(false);
    expect(config.jwt.ttlSeconds).toBe(600);
    expect(config.mail.smtpUrl).toBe("smtp://mail.example:25");
  });

  it("names every bad variable in one error", () => {
    let error: unknown;
    try {
      loadConfig({ TOKEN_TTL_SECONDS: "soon", SMTP_URL: "http://mail", PUBLIC_BASE_URL: "localhost" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain("TOKEN_TTL_SECONDS");
    expect(message).toContain("SMTP_URL");
    expect(message).toContain("PUBLIC_BASE_URL");
  });
});

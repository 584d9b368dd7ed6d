import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { pseudonymizer, scrubEmails } from "./index.ts";

const KEY = "a test key of the journal";
const pseudonymize = pseudonymizer(KEY);
const email = (value: string) => pseudonymize("email", value);
const name = (value: string) => pseudonymize("name", value);

describe("pseudonymizer", () => {
  it("writes a keyed HMAC of kind and normalized value; a nonce as [nonce]", () => {
    const digest = createHmac("sha256", KEY).update("email:ada@example.com").digest("base64url");
    expect(email(" Ada@Example.COM ")).toBe(`[email:${digest.slice(0, 16)}]`);
    expect(pseudonymize("ip", "10.0.0.1")).toMatch(/^\[ip:[A-Za-z0-9_-]{16}\]$/);
    expect(name(" Ada ")).toBe(name("Ada"));
    // Only e-mail addresses are compared without case; the kind is part of what is hashed.
    expect(name("ada")).not.toBe(name("Ada"));
    expect(name("ada@example.com")).not.toBe(email("ada@example.com").replace("email", "name"));
    expect(pseudonymize("nonce", "123456")).toBe("[nonce]");
  });

  it("gives the same pseudonym for the same value and key, another for another key", () => {
    expect(pseudonymizer(KEY)("email", "ada@example.com")).toBe(email("ada@example.com"));
    expect(pseudonymizer(new TextEncoder().encode(KEY))("email", "ada@example.com")).toBe(
      email("ada@example.com"),
    );
    expect(pseudonymizer("another key entirely")("email", "ada@example.com")).not.toBe(
      email("ada@example.com"),
    );
    expect(() => pseudonymizer("")).toThrow();
  });
});

describe("scrubEmails", () => {
  it("replaces e-mail addresses inside longer text", () => {
    const text = 'could not mail Ada@Example.com or "bob.b+x@mail.example.org". Retry later.';
    expect(scrubEmails(text, pseudonymize)).toBe(
      `could not mail ${email("ada@example.com")} or "${email("bob.b+x@mail.example.org")}". Retry later.`,
    );
    expect(scrubEmails('{"mailAddress":"ada@example.com"}', pseudonymize)).toBe(
      `{"mailAddress":"${email("ada@example.com")}"}`,
    );
  });

  it("returns the same string when there is nothing to replace", () => {
    const plain = "user 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4 has no e-mail";
    expect(scrubEmails(plain, pseudonymize)).toBe(plain);
    const notAnAddress = "ping @ada at host@localhost or @ 10:00";
    expect(scrubEmails(notAnAddress, pseudonymize)).toBe(notAnAddress);
  });

  it("leaves wallet addresses beside an e-mail as they are", () => {
    const text = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4 (ada@example.com)";
    expect(scrubEmails(text, pseudonymize)).toBe(
      `0x5B38Da6a701c568545dCfcB03FcB875f56beddC4 (${email("ada@example.com")})`,
    );
  });

  it("stays linear on a long run of address characters", () => {
    const text = `${"a".repeat(200_000)}@${"b".repeat(200_000)}`;
    const started = performance.now();
    expect(scrubEmails(text, pseudonymize)).toBe(text);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

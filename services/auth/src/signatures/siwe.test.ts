import { describe, expect, it } from "vitest";
import {
  checkSiweMessage,
  formatSiweMessage,
  looksLikeSiwe,
  parseSiweMessage,
  type SiweExpectations,
  SiweParseError,
} from "./siwe.ts";

const ADDRESS = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
const NOW = new Date("2026-12-01T12:00:00.000Z");

const fields = {
  domain: "localhost:8080",
  address: ADDRESS,
  statement: "Sign in to Fundraise.",
  uri: "http://localhost:8080/login",
  chainId: 31337,
  nonce: "12345678",
  issuedAt: "2026-12-01T11:59:30.000Z",
};

const expected: SiweExpectations = {
  domain: "localhost:8080",
  baseUrl: "http://localhost:8080",
  chainId: 31337,
  nonce: "12345678",
  address: ADDRESS,
  now: NOW,
  maxAgeSeconds: 300,
  clockSkewSeconds: 60,
};

// The EIP-4361 example message, byte for byte (LF line ends).
const EIP_EXAMPLE = `service.invalid wants you to sign in with your Ethereum account:
0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2

I accept the ServiceOrg Terms of Service: https://service.invalid/tos

URI: https://service.invalid/login
Version: 1
Chain ID: 1
Nonce: 32891756
Issued At: 2021-09-30T16:25:24Z
Resources:
- ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/
- https://example.com/my-web2-claim.json`;

describe("parseSiweMessage", () => {
  it("parses the EIP's own example", () => {
    const m = parseSiweMessage(EIP_EXAMPLE);
    expect(m).toMatchObject({
      scheme: undefined,
      domain: "service.invalid",
      address: "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
      statement: "I accept the ServiceOrg Terms of Service: https://service.invalid/tos",
      uri: "https://service.invalid/login",
      version: "1",
      chainId: 1,
      nonce: "32891756",
      resources: [
        "ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/",
        "https://example.com/my-web2-claim.json",
      ],
    });
    expect(m.issuedAt.toISOString()).toBe("2021-09-30T16:25:24.000Z");
  });

  it("round-trips every optional field, and a message without a statement", () => {
    const full = formatSiweMessage({
      ...fields,
      scheme: "https",
      expirationTime: "2026-12-01T12:10:00Z",
      notBefore: "2026-12-01T11:59:00Z",
      requestId: "req-1",
      resources: ["https://localhost:8080/a"],
    });
    const m = parseSiweMessage(full);
    expect(m.scheme).toBe("https");
    expect(m.expirationTime?.toISOString()).toBe("2026-12-01T12:10:00.000Z");
    expect(m.notBefore?.toISOString()).toBe("2026-12-01T11:59:00.000Z");
    expect(m.requestId).toBe("req-1");

    const bare = formatSiweMessage({ ...fields, statement: undefined });
    expect(bare).toContain(`${ADDRESS}\n\n\nURI: `);
    expect(parseSiweMessage(bare).statement).toBeUndefined();
  });

  it.each([
    ["a wrong header", (t: string) => t.replace("wants you to sign in", "wants to sign in")],
    ["a lower-case (non EIP-55) address", (t: string) => t.replace(ADDRESS, ADDRESS.toLowerCase())],
    ["a bad checksum", (t: string) => t.replace(ADDRESS, ADDRESS.replace("B38", "b38"))],
    ["one blank line only before the fields", (t: string) => t.replace("Sign in to Fundraise.\n\n", "")],
    ["a missing blank line after the statement", (t: string) => t.replace("Fundraise.\n\n", "Fundraise.\n")],
    ["version 2", (t: string) => t.replace("Version: 1", "Version: 2")],
    ["a nonce shorter than 8", (t: string) => t.replace("Nonce: 12345678", "Nonce: 1234567")],
    ["a non-numeric chain id", (t: string) => t.replace("Chain ID: 31337", "Chain ID: 0x7a69")],
    [
      "fields out of order",
      (t: string) => t.replace("Version: 1\nChain ID: 31337", "Chain ID: 31337\nVersion: 1"),
    ],
    ["a date that is not RFC 3339", (t: string) => t.replace("2026-12-01T11:59:30.000Z", "Dec 1 2026")],
    ["CRLF line ends", (t: string) => t.replaceAll("\n", "\r\n")],
    ["trailing text", (t: string) => `${t}\nExtra: field`],
    ["a trailing newline", (t: string) => `${t}\n`],
    ["an unknown field", (t: string) => t.replace("Nonce:", "Nonse:")],
  ])("refuses %s", (_name, mutate) => {
    const text = mutate(formatSiweMessage(fields));
    expect(() => parseSiweMessage(text)).toThrow(SiweParseError);
  });

  it("tells SIWE from the legacy texts", () => {
    expect(looksLikeSiwe(formatSiweMessage(fields))).toBe(true);
    expect(looksLikeSiwe("LOGIN: 12345678")).toBe(false);
    expect(looksLikeSiwe("REGISTER")).toBe(false);
  });
});

describe("checkSiweMessage", () => {
  const check = (
    overrides: Partial<Parameters<typeof formatSiweMessage>[0]>,
    exp: Partial<SiweExpectations> = {},
  ) =>
    checkSiweMessage(parseSiweMessage(formatSiweMessage({ ...fields, ...overrides })), {
      ...expected,
      ...exp,
    });

  it("passes a message made for this deployment", () => {
    expect(check({})).toBeNull();
    expect(check({ uri: "http://LOCALHOST:8080/some/page?x=1#y" })).toBeNull();
    expect(check({ domain: "LOCALHOST:8080" })).toBeNull();
  });

  it.each([
    ["another scheme on the host", "https://localhost:8080/"],
    ["javascript:", "javascript://localhost:8080/%0aalert(1)"],
    ["ftp:", "ftp://localhost:8080/login"],
    ["userinfo", "http://evil@localhost:8080/login"],
    ["userinfo with a password", "http://user:pass@localhost:8080/"],
    ["another port", "http://localhost:8081/login"],
    ["no port (another origin)", "http://localhost/login"],
    ["a host that only starts like ours", "http://localhost.evil.example:8080/"],
    ["an opaque URI", "urn:localhost:8080"],
  ])("refuses a URI outside PUBLIC_BASE_URL's origin: %s", (_name, uri) => {
    expect(check({ uri })).toBe("uri");
  });

  it.each([
    ["domain", { domain: "evil.example" }],
    ["scheme", { scheme: "https" }],
    ["uri", { uri: "https://evil.example/login" }],
    ["chain-id", { chainId: 1 }],
    ["nonce", { nonce: "87654321" }],
    ["issued-in-future", { issuedAt: "2026-12-01T12:05:00Z" }],
    ["issued-too-long-ago", { issuedAt: "2026-12-01T11:50:00Z" }],
    ["expired", { expirationTime: "2026-12-01T11:58:00Z" }],
    ["not-yet-valid", { notBefore: "2026-12-01T12:10:00Z" }],
    ["address", { address: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2" }],
  ] as const)("names the failing check: %s", (problem, overrides) => {
    expect(check(overrides)).toBe(problem);
  });

  it("tolerates the configured clock skew, and no more", () => {
    expect(check({ issuedAt: "2026-12-01T12:00:59Z" })).toBeNull();
    expect(check({ issuedAt: "2026-12-01T12:01:01Z" })).toBe("issued-in-future");
    expect(check({ expirationTime: "2026-12-01T11:59:30Z" })).toBeNull();
    expect(check({ expirationTime: "2026-12-01T11:58:59Z" })).toBe("expired");
  });
});

import { isAppError } from "@fundraise/protocol";
import { hashMessage, Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import type { NonceStore } from "../sign-in/nonce-store.ts";
import { type ContractWalletChecker, LEGACY_REGISTER_MESSAGE } from "./signature.ts";
import {
  createSignedMessageVerifier,
  type SignedMessageInput,
  type SignedMessagePurpose,
} from "./signed-message.ts";
import { formatSiweMessage } from "./siwe.ts";

// anvil's first two well-known keys.
const alice = new Wallet("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");
const bob = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const CHAIN_ID = 31337;
const settings = {
  publicBaseUrl: "http://localhost:8080",
  siweDomain: "localhost:8080",
  nonceTtlSeconds: 300,
  clockSkewSeconds: 60,
  legacyMessages: true,
};
const silent = { info: () => undefined };

/** Nonces in memory, per lower-case address; `taken` lists what was consumed. */
function memoryNonces(issued: Record<string, number[]>) {
  const live = new Map(Object.entries(issued).map(([a, ns]) => [a.toLowerCase(), [...ns]]));
  const taken: string[] = [];
  const store: NonceStore = {
    issue: async () => {
      throw new Error("not used");
    },
    live: async (address) => [...(live.get(address.toLowerCase()) ?? [])],
    take: async (address, nonce) => {
      const ns = live.get(address.toLowerCase()) ?? [];
      const i = ns.indexOf(Number(nonce));
      if (i < 0) return false;
      ns.splice(i, 1);
      taken.push(nonce);
      return true;
    },
  };
  return { store, taken, live: (address: string) => live.get(address.toLowerCase()) ?? [] };
}

const noContracts: ContractWalletChecker = {
  hasCode: async () => false,
  isValidSignature: async () => {
    throw new Error("no contract to ask");
  },
};

function setup(
  issued: Record<string, number[]>,
  options: { legacyMessages?: boolean; chain?: ContractWalletChecker } = {},
) {
  const nonces = memoryNonces(issued);
  const limited: string[] = [];
  const verify = createSignedMessageVerifier({
    nonces: nonces.store,
    chain: { chainId: CHAIN_ID, ...(options.chain ?? noContracts) },
    settings: { ...settings, legacyMessages: options.legacyMessages ?? true },
  });
  const run = (
    purpose: SignedMessagePurpose,
    fields: Omit<SignedMessageInput<unknown>, "purpose" | "limit" | "log">,
  ) =>
    verify({
      purpose,
      ...fields,
      log: silent,
      limit: async (address) => {
        limited.push(address);
        return "counted";
      },
    });
  return { run, nonces, limited };
}

const siwe = (
  address: string,
  nonce: number,
  overrides: Partial<Parameters<typeof formatSiweMessage>[0]> = {},
) =>
  formatSiweMessage({
    domain: "localhost:8080",
    address,
    statement: "Sign in to Fundraise.",
    uri: "http://localhost:8080/login",
    chainId: CHAIN_ID,
    nonce: String(nonce),
    issuedAt: new Date(),
    ...overrides,
  });

/** The error's kind, code and HTTP-facing message, to compare. */
async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    if (!isAppError(error)) throw error;
    return { kind: error.kind, code: error.code, message: error.message };
  }
  throw new Error("expected a failure");
}

describe("verifySignedMessage: login", () => {
  it("takes only the outstanding nonce a bare `LOGIN: <n>` signature matches", async () => {
    const { run, nonces, limited } = setup({ [alice.address]: [11111111, 22222222, 33333333] });
    const signedMessage = await alice.signMessage("LOGIN: 22222222");
    expect(await run("login", { address: alice.address, signedMessage })).toEqual({
      address: alice.address,
      proof: "nonce",
      nonce: "22222222",
      limited: "counted",
    });
    expect(nonces.live(alice.address)).toEqual([11111111, 33333333]);
    expect(limited).toEqual([alice.address]);
  });

  it("consumes nothing when a bare signature matches no outstanding nonce", async () => {
    const { run, nonces } = setup({ [alice.address]: [11111111] });
    const signedMessage = await bob.signMessage("LOGIN: 11111111");
    expect(await failure(run("login", { address: alice.address, signedMessage }))).toMatchObject({
      kind: "unauthenticated",
      code: "LOGIN_FAILED",
    });
    expect(nonces.taken).toEqual([]);
  });

  it("consumes a named nonce whatever the outcome", async () => {
    const { run, nonces } = setup({ [alice.address]: [11111111, 22222222] });
    const signedMessage = await bob.signMessage("LOGIN: 11111111");
    await failure(run("login", { address: alice.address, signedMessage, message: "LOGIN: 11111111" }));
    const message = siwe(alice.address, 22222222, { chainId: 1 });
    await failure(
      run("login", { address: alice.address, signedMessage: await alice.signMessage(message), message }),
    );
    expect(nonces.taken).toEqual(["11111111", "22222222"]);
  });

  it("takes the address from a SIWE message when the request names none", async () => {
    const { run } = setup({ [alice.address]: [11111111] });
    const message = siwe(alice.address, 11111111);
    const result = await run("login", { signedMessage: await alice.signMessage(message), message });
    expect(result).toMatchObject({ address: alice.address, proof: "nonce", nonce: "11111111" });
  });

  it("asks a contract wallet (EIP-1271) for each outstanding nonce of a bare signature", async () => {
    const wallet = "0x000000000000000000000000000000000000c0de";
    const contract: ContractWalletChecker = {
      hasCode: async () => true,
      isValidSignature: async (_address, hash) => hash === hashMessage("LOGIN: 22222222"),
    };
    const { run, nonces } = setup({ [wallet]: [11111111, 22222222] }, { chain: contract });
    const signedMessage = await bob.signMessage("anything");
    expect(await run("login", { address: wallet, signedMessage })).toMatchObject({ nonce: "22222222" });
    expect(nonces.taken).toEqual(["22222222"]);
  });

  it("refuses legacy texts with the one 401 when they are switched off, after counting", async () => {
    const { run, nonces, limited } = setup({ [alice.address]: [11111111] }, { legacyMessages: false });
    const signedMessage = await alice.signMessage("LOGIN: 11111111");
    expect(await failure(run("login", { address: alice.address, signedMessage }))).toMatchObject({
      code: "LOGIN_FAILED",
    });
    expect(limited).toEqual([alice.address]);
    expect(nonces.taken).toEqual([]);
  });
});

describe("verifySignedMessage: register", () => {
  it("proves `REGISTER` as legacy, `REGISTER: <nonce>` and SIWE as nonce", async () => {
    const { run, nonces } = setup({ [alice.address]: [11111111, 22222222] });
    const bare = await alice.signMessage(LEGACY_REGISTER_MESSAGE);
    expect(await run("register", { signedMessage: bare })).toEqual({
      address: alice.address,
      proof: "legacy",
      limited: "counted",
    });
    expect(await run("register", { signedMessage: bare, message: "REGISTER" })).toMatchObject({
      proof: "legacy",
    });
    const withNonce = await alice.signMessage("REGISTER: 11111111");
    expect(await run("register", { signedMessage: withNonce, message: "REGISTER: 11111111" })).toMatchObject({
      address: alice.address,
      proof: "nonce",
      nonce: "11111111",
    });
    const message = siwe(alice.address, 22222222);
    expect(await run("register", { signedMessage: await alice.signMessage(message), message })).toMatchObject(
      {
        address: alice.address,
        proof: "nonce",
      },
    );
    expect(nonces.taken).toEqual(["11111111", "22222222"]);
  });

  it("answers 400 for a bad signature or message, naming the field", async () => {
    const { run } = setup({ [alice.address]: [11111111] });
    const message = siwe(alice.address, 11111111);
    expect(
      await failure(run("register", { signedMessage: await bob.signMessage(message), message })),
    ).toEqual({
      kind: "validation",
      code: "VALIDATION_FAILED",
      message: "The signature or the signed message is not valid.",
    });
    expect(
      await failure(
        run("register", { signedMessage: await alice.signMessage("x"), message: "LOGIN: 11111111" }),
      ),
    ).toMatchObject({
      kind: "validation",
      message: expect.stringContaining("message is not an EIP-4361 message"),
    });
  });

  it("refuses legacy texts with a 400 naming `message` before counting, when switched off", async () => {
    const { run, limited } = setup({ [alice.address]: [11111111] }, { legacyMessages: false });
    for (const message of [undefined, "REGISTER", "REGISTER: 11111111"]) {
      const signedMessage = await alice.signMessage(message ?? LEGACY_REGISTER_MESSAGE);
      expect(await failure(run("register", { signedMessage, message }))).toMatchObject({
        kind: "validation",
        message: expect.stringContaining("must be an EIP-4361"),
      });
    }
    expect(limited).toEqual([]);
  });
});

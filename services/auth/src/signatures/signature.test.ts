import { hashMessage, Signature, verifyMessage, Wallet } from "ethers";
import { describe, expect, it } from "vitest";
import {
  type ContractWalletChecker,
  isSignatureHex,
  isSignedBy,
  LEGACY_REGISTER_MESSAGE,
  legacyLoginMessage,
  legacyRegisterMessage,
  nonceOfLegacyLogin,
  nonceOfLegacyRegister,
  recoverSigner,
} from "./signature.ts";

// anvil's first two well-known keys: fixed values make the vectors below reproducible.
const alice = new Wallet("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");
const bob = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");

/** A chain where nothing has code: EIP-1271 must never be consulted. */
const noContracts: ContractWalletChecker = {
  hasCode: async () => false,
  isValidSignature: async () => {
    throw new Error("no contract to ask");
  },
};

describe("legacy messages", () => {
  it("are exactly the texts the existing client signs", () => {
    expect(legacyLoginMessage(12345678)).toBe("LOGIN: 12345678");
    expect(LEGACY_REGISTER_MESSAGE).toBe("REGISTER");
    expect(legacyRegisterMessage(12345678)).toBe("REGISTER: 12345678");
  });

  it("give their nonce back, and only for the exact layout", () => {
    expect(nonceOfLegacyLogin("LOGIN: 12345678")).toBe("12345678");
    expect(nonceOfLegacyRegister("REGISTER: 12345678")).toBe("12345678");
    for (const text of [
      "LOGIN:12345678",
      "LOGIN: 1234x678",
      " LOGIN: 12345678",
      "LOGIN: 12345678\n",
      "REGISTER",
    ]) {
      expect(nonceOfLegacyLogin(text)).toBeUndefined();
      expect(nonceOfLegacyRegister(text)).toBeUndefined();
    }
  });
});

describe("recoverSigner", () => {
  it("recovers the EIP-191 personal_sign signer, EIP-55", async () => {
    const signature = await alice.signMessage("LOGIN: 12345678");
    expect(recoverSigner("LOGIN: 12345678", signature)).toBe(alice.address);
    expect(recoverSigner("LOGIN: 12345679", signature)).not.toBe(alice.address);
  });

  it("agrees with ethers' own recovery on many keys and messages (v 27/28, EIP-2098 compact form)", async () => {
    for (let i = 0; i < 40; i++) {
      const wallet = Wallet.createRandom();
      const message = `LOGIN: ${i * 7919}`;
      const signature = await wallet.signMessage(message);
      expect(recoverSigner(message, signature)).toBe(verifyMessage(message, signature));
      expect(recoverSigner(message, Signature.from(signature).compactSerialized)).toBe(wallet.address);
    }
  });

  it("returns undefined for malformed signatures", async () => {
    const signature = await alice.signMessage("REGISTER");
    expect(recoverSigner("REGISTER", "0x1234")).toBeUndefined();
    expect(recoverSigner("REGISTER", `${signature.slice(0, -2)}05`)).toBeUndefined(); // bad v
    // The same signature with s in the upper half (malleated) is refused.
    const sig = Signature.from(signature);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = `0x${(n - BigInt(sig.s)).toString(16).padStart(64, "0")}`;
    const malleated = `0x${sig.r.slice(2)}${highS.slice(2)}${(sig.v === 27 ? 28 : 27).toString(16)}`;
    expect(recoverSigner("REGISTER", malleated)).toBeUndefined();
  });
});

describe("isSignedBy", () => {
  it("accepts the address's own signature without asking the chain", async () => {
    const signature = await alice.signMessage("hello");
    expect(await isSignedBy(alice.address, "hello", signature, noContracts)).toBe(true);
    expect(await isSignedBy(alice.address.toLowerCase(), "hello", signature, noContracts)).toBe(true);
  });

  it("refuses a signature of another address", async () => {
    const signature = await bob.signMessage("hello");
    expect(await isSignedBy(alice.address, "hello", signature, noContracts)).toBe(false);
  });

  it("asks an address with code (EIP-1271) with the EIP-191 hash of the message", async () => {
    const asked: [string, string, string][] = [];
    const contract: ContractWalletChecker = {
      hasCode: async () => true,
      isValidSignature: async (address, hash, signature) => {
        asked.push([address, hash, signature]);
        return true;
      },
    };
    const wallet = "0x000000000000000000000000000000000000c0de";
    const signature = await bob.signMessage("hello");
    expect(await isSignedBy(wallet, "hello", signature, contract)).toBe(true);
    expect(asked).toEqual([[wallet, hashMessage("hello"), signature]]);
    const refusing: ContractWalletChecker = {
      hasCode: async () => true,
      isValidSignature: async () => false,
    };
    expect(await isSignedBy(wallet, "hello", signature, refusing)).toBe(false);
  });
});

describe("input shapes", () => {
  it("accepts 0x-hex signatures only", () => {
    expect(isSignatureHex("0xabcd")).toBe(true);
    expect(isSignatureHex("abcd")).toBe(false);
    expect(isSignatureHex("0xabc")).toBe(false);
    expect(isSignatureHex("0x")).toBe(false);
  });
});

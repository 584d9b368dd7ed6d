import { parseAddress } from "@fundraise/protocol";
import { getBytes, hashMessage, keccak256, Signature } from "ethers";
import secp256k1 from "secp256k1";

/**
 * The legacy texts (rules.md §2.4, §7.2), accepted while LEGACY_MESSAGES is on: `LOGIN: <nonce>` and
 * `REGISTER`, which the existing web client signs, and `REGISTER: <nonce>` (a nonce from GetNonce), the
 * sign-up text whose signature cannot be replayed.
 */
export const legacyLoginMessage = (nonce: number | string): string => `LOGIN: ${nonce}`;
export const LEGACY_REGISTER_MESSAGE = "REGISTER";
export const legacyRegisterMessage = (nonce: number | string): string => `REGISTER: ${nonce}`;

const LEGACY_LOGIN = /^LOGIN: (\d+)$/;
const LEGACY_REGISTER_WITH_NONCE = /^REGISTER: (\d+)$/;

/** The nonce of a `LOGIN: <nonce>` text, or undefined when the text is not one. */
export const nonceOfLegacyLogin = (text: string): string | undefined => LEGACY_LOGIN.exec(text)?.[1];
/** The nonce of a `REGISTER: <nonce>` text, or undefined when the text is not one. */
export const nonceOfLegacyRegister = (text: string): string | undefined =>
  LEGACY_REGISTER_WITH_NONCE.exec(text)?.[1];

/** EIP-1271's answer for a valid signature: bytes4(keccak256("isValidSignature(bytes32,bytes)")). */
export const EIP1271_MAGIC_VALUE = "0x1626ba7e";

const HEX = /^0x(?:[0-9a-fA-F]{2})+$/;

/** A signature as the client sends it: 0x-hex bytes (65 for an EOA, anything for a contract wallet). */
export function isSignatureHex(value: string): boolean {
  return HEX.test(value) && value.length <= 2 + 2 * 1024;
}

/**
 * EIP-191 `personal_sign` recovery: the EIP-55 address whose key signed `message`, or undefined when the
 * signature is not a well-formed secp256k1 signature (wrong length, s in the upper half, bad v).
 */
export function recoverSigner(message: string, signature: string): string | undefined {
  try {
    // Signature.from enforces the canonical (low-s) form and a valid recovery id.
    const { r, s, yParity } = Signature.from(signature);
    // libsecp256k1 (the `secp256k1` package's prebuilt binding; its pure-JS fallback when none loads):
    // about 0.1 ms against 1.8 ms for ethers' JS recovery, the largest CPU cost of a sign-in.
    const compact = getBytes(`${r}${s.slice(2)}`);
    const publicKey = secp256k1.ecdsaRecover(compact, yParity, getBytes(hashMessage(message)), false);
    // The address is the last 20 bytes of keccak256 of the uncompressed key without its 0x04 prefix
    // (what ethers' computeAddress does after parsing the key again as a curve point, which cost more).
    return parseAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);
  } catch {
    return undefined;
  }
}

/** What the chain must answer to check contract wallets (EIP-1271). */
export interface ContractWalletChecker {
  /** True when the address has code (a contract, or an EIP-7702 delegated account). */
  hasCode(address: string): Promise<boolean>;
  /** `isValidSignature(hash, signature)` on the contract; false when it reverts or answers anything else. */
  isValidSignature(address: string, hash: string, signature: string): Promise<boolean>;
}

/**
 * Did `address` sign `message`? An ECDSA signature by the address's own key is accepted without touching
 * the chain; otherwise, when the address has code, the contract decides (EIP-1271) over
 * `hashMessage(message)`, the EIP-191 hash the wallet signed. Chain failures propagate (503 upstream).
 */
export async function isSignedBy(
  address: string,
  message: string,
  signature: string,
  chain: ContractWalletChecker,
): Promise<boolean> {
  const recovered = recoverSigner(message, signature);
  if (recovered !== undefined && recovered.toLowerCase() === address.toLowerCase()) return true;
  if (!(await chain.hasCode(address))) return false;
  return chain.isValidSignature(address, hashMessage(message), signature);
}

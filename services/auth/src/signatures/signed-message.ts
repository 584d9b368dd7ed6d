import { ErrorCode, errors, type SignUpProof } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { hashMessage } from "ethers";
import { invalidFields, optionalMessage, requireAddress, requireSignature } from "../sign-in/input.ts";
import type { NonceStore } from "../sign-in/nonce-store.ts";
import {
  type ContractWalletChecker,
  isSignedBy,
  LEGACY_REGISTER_MESSAGE,
  legacyLoginMessage,
  nonceOfLegacyLogin,
  nonceOfLegacyRegister,
  recoverSigner,
} from "./signature.ts";
import { checkSiweMessage, parseSiweMessage, type SiweMessage } from "./siwe.ts";

/** The one answer for every failed sign-in: it must not tell which part was wrong (rules.md §2.11). */
export const LOGIN_FAILED_MESSAGE = "Sign-in failed: the address, nonce or signature is not valid.";
export const REGISTER_SIGNATURE_MESSAGE = "The signature or the signed message is not valid.";

export type SignedMessagePurpose = "login" | "register";

/**
 * The purpose's answer to a signature that proves nothing, with the reason logged (never returned): login
 * 401 `LOGIN_FAILED` with the one message; register 400 naming `signedMessage` (nothing is signed in to).
 */
export function refusal(
  purpose: SignedMessagePurpose,
  log: Pick<Logger, "info">,
  reason: string,
  address?: string,
) {
  if (purpose === "login") {
    log.info({ reason, address }, "login refused");
    return errors.unauthenticated(ErrorCode.LOGIN_FAILED, LOGIN_FAILED_MESSAGE);
  }
  log.info({ reason, address }, "register refused");
  return errors.validation(ErrorCode.VALIDATION_FAILED, REGISTER_SIGNATURE_MESSAGE, {
    details: [{ path: "/signedMessage", message: "does not sign a valid message for this address" }],
  });
}

export interface SignedMessageInput<L> {
  purpose: SignedMessagePurpose;
  /** Login: the address signing in; may be left out with a SIWE message (the message's is taken). */
  address?: string | null | undefined;
  signedMessage: string | null | undefined;
  /** The signed text; left out, the legacy one: `LOGIN: <an outstanding nonce>` or `REGISTER`. */
  message?: string | null | undefined;
  /**
   * The caller's rate limits (per client IP and per IP + address), run once the address is known and
   * before any nonce is touched; what it returns comes back as `limited`.
   */
  limit: (address: string) => Promise<L>;
  log: Pick<Logger, "info">;
}

export interface VerifiedMessage<L> {
  /** EIP-55. */
  address: string;
  /** `legacy` for the constant `REGISTER` (a seen signature can be replayed), else `nonce`. */
  proof: SignUpProof;
  /** The GetNonce nonce the signature proved, now consumed (absent for `REGISTER`). */
  nonce?: string;
  limited: L;
}

export interface SignedMessageSettings {
  publicBaseUrl: string;
  siweDomain: string;
  nonceTtlSeconds: number;
  clockSkewSeconds: number;
  legacyMessages: boolean;
}

/** What the client signed, as far as the text alone tells. */
type Signed =
  /** Login without `message`: `LOGIN: <n>` for one of the address's outstanding nonces. */
  | { kind: "bare" }
  /** Register: the constant `REGISTER` (sent or not). */
  | { kind: "constant" }
  /** `LOGIN: <nonce>` or `REGISTER: <nonce>`. */
  | { kind: "legacy"; text: string; nonce: string }
  | { kind: "siwe"; text: string; siwe: SiweMessage }
  /** Neither a legacy text of the purpose nor EIP-4361. */
  | { kind: "unreadable"; problem: string };

function read(purpose: SignedMessagePurpose, text: string | undefined): Signed {
  if (text === undefined) return purpose === "login" ? { kind: "bare" } : { kind: "constant" };
  if (purpose === "register" && text === LEGACY_REGISTER_MESSAGE) return { kind: "constant" };
  const nonce = purpose === "login" ? nonceOfLegacyLogin(text) : nonceOfLegacyRegister(text);
  if (nonce !== undefined) return { kind: "legacy", text, nonce };
  try {
    return { kind: "siwe", text, siwe: parseSiweMessage(text) };
  } catch (error) {
    return { kind: "unreadable", problem: (error as Error).message };
  }
}

/**
 * The one check of a signed sign-in message, for login and register (rules.md §2.4–§2.6, §7.2): the legacy texts,
 * EIP-4361, and EIP-1271 for contract wallets. Which nonce is consumed:
 * - a text that names its nonce (`LOGIN: <n>`, `REGISTER: <n>`, SIWE) consumes it, whatever the outcome;
 * - login without `message`: the outstanding nonce whose `LOGIN: <n>` the signature matches, and nothing
 *   when it matches none (it proves no nonce; consuming would let anyone cancel the owner's nonces);
 * - `REGISTER` has none (proof `legacy`).
 * Legacy texts need LEGACY_MESSAGES. Failures throw the purpose's error (`refusal`); malformed input is 400.
 */
export function createSignedMessageVerifier(deps: {
  nonces: NonceStore;
  /** The chain's id (SIWE `Chain ID`) and its EIP-1271 calls (`chain/chain.ts`). */
  chain: ContractWalletChecker & { readonly chainId: number };
  settings: SignedMessageSettings;
}) {
  const { nonces, chain, settings } = deps;

  /**
   * Which outstanding nonce of the address a bare signature signs as `LOGIN: <nonce>`, if any: the signer
   * is recovered for each (cheap, local); a contract wallet's contract is asked for each, in parallel.
   */
  async function signedLegacyNonce(
    address: string,
    signature: string,
    outstanding: Promise<number[]>,
  ): Promise<string | undefined> {
    const live = await outstanding;
    if (live.length === 0) return undefined;
    const own = live.find(
      (n) => recoverSigner(legacyLoginMessage(n), signature)?.toLowerCase() === address.toLowerCase(),
    );
    if (own !== undefined) return String(own);
    if (!(await chain.hasCode(address))) return undefined;
    const verdicts = await Promise.all(
      live.map((n) => chain.isValidSignature(address, hashMessage(legacyLoginMessage(n)), signature)),
    );
    const index = verdicts.indexOf(true);
    return index < 0 ? undefined : String(live[index]);
  }

  return async function verifySignedMessage<L>(input: SignedMessageInput<L>): Promise<VerifiedMessage<L>> {
    const { purpose, log } = input;
    const signature = requireSignature(input.signedMessage);
    const signed = read(purpose, optionalMessage(input.message));
    const isLegacy = signed.kind !== "siwe" && signed.kind !== "unreadable";

    // Register answers a message it cannot use with a 400 naming `message`, before anything is counted.
    if (purpose === "register") {
      if (signed.kind === "unreadable") {
        throw invalidFields([{ path: "/message", message: `is not an EIP-4361 message: ${signed.problem}` }]);
      }
      if (isLegacy && !settings.legacyMessages) {
        throw invalidFields([
          { path: "/message", message: "must be an EIP-4361 (Sign-In with Ethereum) message" },
        ]);
      }
    }

    // The address: a SIWE message's (login: when the request names none); login's claimed one; register's
    // legacy texts, the recovered signer (EOAs only: contract wallets register with SIWE).
    let address: string;
    let recoveredFromText = false;
    if (signed.kind === "siwe" && (purpose === "register" || optionalMessage(input.address) === undefined)) {
      address = signed.siwe.address;
    } else if (purpose === "login") {
      address = requireAddress(input.address);
    } else {
      const text = signed.kind === "legacy" ? signed.text : LEGACY_REGISTER_MESSAGE;
      const recovered = recoverSigner(text, signature);
      if (!recovered) throw refusal(purpose, log, "malformed signature");
      address = recovered;
      recoveredFromText = true;
    }
    // A bare signature is checked against the outstanding nonces: read them with the limit's count, so
    // both go to Redis in one write (auto-pipelining); the read is dropped if the limit refuses.
    const outstanding = signed.kind === "bare" ? nonces.live(address) : undefined;
    outstanding?.catch(() => undefined);
    const limited = await input.limit(address);
    const refuse = (reason: string) => refusal(purpose, log, reason, address);
    // Login: a refused legacy text is a failed sign-in like any other (counted, 401).
    if (isLegacy && !settings.legacyMessages) throw refuse("legacy messages are disabled");

    switch (signed.kind) {
      case "constant":
        return { address, proof: "legacy", limited };
      case "bare": {
        // Only the nonce the signature matches is consumed; one that matches none consumes nothing.
        const nonce = await signedLegacyNonce(address, signature, outstanding ?? nonces.live(address));
        if (nonce === undefined) throw refuse("the signature matches no outstanding nonce");
        if (!(await nonces.take(address, nonce))) throw refuse("nonce used by a concurrent attempt");
        return { address, proof: "nonce", nonce, limited };
      }
      case "unreadable":
        throw refuse(`not an EIP-4361 message: ${signed.problem}`);
    }
    // The text names its nonce: the attempt consumes it, whatever its outcome.
    const nonce = signed.kind === "legacy" ? signed.nonce : signed.siwe.nonce;
    if (!(await nonces.take(address, nonce))) throw refuse("no such nonce (never issued, expired or used)");
    if (signed.kind === "siwe") {
      const problem = checkSiweMessage(signed.siwe, {
        domain: settings.siweDomain,
        baseUrl: settings.publicBaseUrl,
        chainId: chain.chainId,
        nonce,
        address,
        now: new Date(),
        maxAgeSeconds: settings.nonceTtlSeconds,
        clockSkewSeconds: settings.clockSkewSeconds,
      });
      if (problem) throw refuse(`EIP-4361 check failed: ${problem}`);
    }
    // The address's own key, or (when it has code) its contract's EIP-1271 answer; a signer recovered from
    // this very text has signed it already.
    if (!recoveredFromText && !(await isSignedBy(address, signed.text, signature, chain))) {
      throw refuse("signature");
    }
    return { address, proof: "nonce", nonce, limited };
  };
}

export type VerifySignedMessage = ReturnType<typeof createSignedMessageVerifier>;

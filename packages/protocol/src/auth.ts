import Type from "typebox";
import { Address, Id, Nullable } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";
import { personal } from "./personal.ts";
import { SessionChange, SessionState } from "./sessions.ts";

/** The signed text of a sign-in or sign-up: it carries the sign-in nonce, so it is treated as one. */
const SignedText = Type.Optional(
  personal("nonce", Nullable(Type.String({ maxLength: 4096, description: "full EIP-4361 message" }))),
);

export const UserLoginRequest = Type.Object(
  {
    address: Nullable(Type.String({ maxLength: 64 })),
    signedMessage: Nullable(Type.String({ maxLength: 1024 })),
    message: SignedText,
  },
  { $id: "UserLoginRequest" },
);

export const UserRegisterRequest = Type.Object(
  {
    name: personal("name", Nullable(Type.String({ maxLength: 100 }))),
    surname: personal("name", Nullable(Type.String({ maxLength: 100 }))),
    username: Nullable(Type.String({ maxLength: 32 })),
    mailAddress: personal("email", Nullable(Type.String({ maxLength: 254 }))),
    signedMessage: Nullable(Type.String({ maxLength: 1024 })),
    message: SignedText,
  },
  { $id: "UserRegisterRequest" },
);

/** Where a request came from, for per-IP rate limits. */
const Origin = Type.Object({ ip: personal("ip", Type.String()) });

export const Jwks = Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) });

export const AuthRpc = {
  nonce: defineRpc("auth.nonce.issue", {
    request: Type.Object({ address: Type.String(), origin: Origin }),
    response: personal("nonce", Type.Integer({ minimum: 0 })),
  }),
  login: defineRpc("auth.session.login", {
    request: Type.Object({ login: UserLoginRequest, origin: Origin }),
    response: Type.String({ description: "the JWT" }),
    timeoutMs: 15_000,
    journal: false,
    answerKept: false,
  }),
  register: defineRpc("auth.user.register", {
    request: Type.Object({ register: UserRegisterRequest, origin: Origin }),
    response: Type.String({ description: "the new user's id" }),
    timeoutMs: 20_000,
    journal: false,
  }),
  verifyEmail: defineRpc("auth.email.verify", {
    request: Type.Object({ email: personal("email", Type.String()), token: Type.String() }),
    response: Type.String(),
    journal: false,
  }),
  jwks: defineRpc("auth.keys.jwks", { request: Type.Object({}), response: Jwks, effect: "read" }),
  /**
   * Asked by the gateway when a session hash is missing from Redis: rebuilt from Postgres, then answered.
   * A read: Redis gets a copy of what Postgres holds (merged, never older), Postgres is not written.
   */
  rebuildSession: defineRpc("auth.session.rebuild", {
    request: Type.Object({ userId: Id }),
    response: SessionState,
    effect: "read",
  }),
  /**
   * Asked by the users service before an admin's role change or an account's deletion answers: the session
   * holds the change when this answers, so every request that starts afterwards, on any gateway, is judged
   * by it (rules.md §8.2). Idempotent and ordered by the account version.
   */
  applySession: defineRpc("auth.session.apply", {
    request: SessionChange,
    response: SessionState,
  }),
} as const;

export const AuthEvents = {
  registered: defineEvent("auth.user.registered", Type.Object({ userId: Id, address: Address })),
  verified: defineEvent("auth.user.verified", Type.Object({ userId: Id, address: Address })),
} as const;

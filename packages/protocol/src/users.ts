import Type from "typebox";
import { Address, Caller, DateTime, Id, Nullable, UserRole } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";
import { personal } from "./personal.ts";
import { ProjectPermission } from "./projects.ts";

/** A user as returned (UserDTO). Nonce and verification data never leave the auth service. */
export const UserDto = Type.Object(
  {
    id: Id,
    name: personal("name", Nullable(Type.String())),
    surname: personal("name", Nullable(Type.String())),
    address: Nullable(Type.String()),
    mailAddress: personal("email", Nullable(Type.String())),
    username: Nullable(Type.String()),
    role: Nullable(UserRole),
    invitations: Nullable(Type.Array(ProjectPermission)),
  },
  { $id: "UserDTO" },
);

/** The updatable part of a UserDTO (PUT /user/update); address, role and invitations are ignored. */
export const UserUpdate = Type.Object({
  name: Type.Optional(personal("name", Nullable(Type.String({ maxLength: 100 })))),
  surname: Type.Optional(personal("name", Nullable(Type.String({ maxLength: 100 })))),
  username: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
  mailAddress: Type.Optional(personal("email", Nullable(Type.String({ maxLength: 254 })))),
});

const Signed = Type.Object({ caller: Caller });

/**
 * A user as the auth service needs it (sign-in, verification): never leaves the backend, since
 * `isVerified` and the role decide whether and how a token is issued.
 */
export const UserAccount = Type.Object({
  id: Id,
  address: Address,
  username: Type.String(),
  name: personal("name", Type.String()),
  surname: personal("name", Type.String()),
  mailAddress: personal("email", Nullable(Type.String())),
  role: UserRole,
  /** The chain's role when last seen (sign-in skips telling the users service what it already knows). */
  chainRole: Nullable(UserRole),
  isVerified: Type.Boolean(),
  /** Raised by every role change (packages/protocol sessions.ts): a token is issued at this version. */
  version: Type.Integer({ minimum: 0 }),
});

export const SIGN_UP_PROOFS = ["legacy", "nonce"] as const;
export const SignUpProof = Type.Enum(SIGN_UP_PROOFS);
export type SignUpProof = (typeof SIGN_UP_PROOFS)[number];

/** Sign-up data after the auth service checked the signature: the address is the recovered one. */
export const NewUser = Type.Object({
  address: Address,
  name: personal("name", Type.String({ minLength: 1, maxLength: 100 })),
  surname: personal("name", Type.String({ minLength: 1, maxLength: 100 })),
  username: Type.String({ minLength: 3, maxLength: 32, pattern: "^[A-Za-z0-9_.-]+$" }),
  mailAddress: personal("email", Type.String({ minLength: 3, maxLength: 254 })),
  /** Until then this unverified registration blocks its address, username and e-mail; after, it is replaced. */
  pendingUntil: DateTime,
  /**
   * How the auth service proved the wallet's consent: `legacy` = the constant `REGISTER` text (its signature
   * can be replayed), `nonce` = a message with a fresh GetNonce nonce (SIWE or `REGISTER: <nonce>`). A
   * nonce-proven sign-up replaces a pending legacy one of the same address. Absent: `legacy`.
   */
  proof: Type.Optional(SignUpProof),
});

export const UsersRpc = {
  count: defineRpc("users.user.count", {
    request: Type.Object({}),
    response: Type.Integer(),
    effect: "read",
  }),
  get: defineRpc("users.user.get", { request: Signed, response: UserDto, effect: "read" }),
  update: defineRpc("users.user.update", {
    request: Type.Object({ caller: Caller, user: UserUpdate }),
    response: UserDto,
  }),
  deleteSelf: defineRpc("users.user.delete-self", { request: Signed, response: Type.Null() }),
  delete: defineRpc("users.user.delete", {
    request: Type.Object({ caller: Caller, id: Type.Integer() }),
    response: Type.Null(),
  }),
  list: defineRpc("users.user.list", { request: Signed, response: Type.Array(UserDto), effect: "read" }),
  updateRole: defineRpc("users.user.update-role", {
    request: Type.Object({ caller: Caller, address: Type.String(), role: Type.String() }),
    response: UserDto,
  }),
  // Asked by the auth service only (sign-up, verification, sign-in).
  register: defineRpc("users.user.register", {
    request: NewUser,
    response: Type.Object({
      userId: Id,
      /** An expired sign-up, or a pending legacy-proven one of the same address, was deleted for this one. */
      replaced: Type.Boolean(),
      /** The same data as the address's pending sign-up: nothing changed, the auth service re-sends the link. */
      resent: Type.Boolean(),
    }),
  }),
  byAddress: defineRpc("users.user.by-address", {
    request: Type.Object({ address: Address }),
    response: Nullable(UserAccount),
    effect: "read",
  }),
  markVerified: defineRpc("users.user.mark-verified", {
    request: Type.Object({ userId: Id, mailAddress: personal("email", Type.String()) }),
    response: UserAccount,
  }),
  setChainRole: defineRpc("users.user.set-chain-role", {
    request: Type.Object({ address: Address, role: UserRole }),
    response: Nullable(UserAccount),
  }),
  // Asked by the projects service only (memberships name users by username; co-owners are UserDTOs).
  /** The user with this username (any case), or null; `invitations` is null. */
  byUsername: defineRpc("users.user.by-username", {
    request: Type.Object({ username: Type.String({ minLength: 1, maxLength: 64 }) }),
    response: Nullable(UserDto),
    effect: "read",
  }),
  /** The users with these ids that exist, in id order; `invitations` is null. */
  byIds: defineRpc("users.user.by-ids", {
    request: Type.Object({ ids: Type.Array(Id, { maxItems: 1000 }) }),
    response: Type.Array(UserDto),
    effect: "read",
  }),
} as const;

export const UsersEvents = {
  /**
   * A user's sign-in fields (`UserAccount`) changed, or the user was deleted: written by a row trigger in
   * the changing transaction, whatever the change. Says only whose account; readers that keep a copy drop
   * it and read the account again.
   */
  accountChanged: defineEvent("users.user.account-changed", Type.Object({ userId: Id, address: Address })),
  /** `version`: the account's last version plus one (the session's `deleted` is written at it). */
  deleted: defineEvent(
    "users.user.deleted",
    Type.Object({ userId: Id, address: Address, version: Type.Optional(Type.Integer({ minimum: 1 })) }),
  ),
  /** A user changed the e-mail: it is unverified until the link the auth service mails is followed. */
  emailChanged: defineEvent(
    "users.user.email-changed",
    Type.Object({ userId: Id, address: Address, mailAddress: personal("email", Type.String()) }),
  ),
  roleChanged: defineEvent(
    "users.user.role-changed",
    Type.Object({
      userId: Id,
      address: Address,
      role: UserRole,
      previousRole: UserRole,
      changedBy: Type.String({ description: "admin user id, or 'chain'" }),
      /** The account's version after the change (absent in events of an earlier layout). */
      version: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
  ),
} as const;

import Type from "typebox";
import { Address, Caller, Id, Nullable, UserRole } from "./common.ts";
import { defineEvent, defineRpc } from "./message.ts";
import { ProjectPermission } from "./projects.ts";

/** A user as returned (UserDTO). Nonce and verification data never leave the auth service. */
export const UserDto = Type.Object(
  {
    id: Id,
    name: Nullable(Type.String()),
    surname: Nullable(Type.String()),
    address: Nullable(Type.String()),
    mailAddress: Nullable(Type.String()),
    username: Nullable(Type.String()),
    role: Nullable(UserRole),
    invitations: Nullable(Type.Array(ProjectPermission)),
  },
  { $id: "UserDTO" },
);

/** The updatable part of a UserDTO (PUT /user/update); address, role and invitations are ignored. */
export const UserUpdate = Type.Object({
  name: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  surname: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  username: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
  mailAddress: Type.Optional(Nullable(Type.String({ maxLength: 254 }))),
});

const Signed = Type.Object({ caller: Caller });

export const UsersRpc = {
  count: defineRpc("users.user.count", { request: Type.Object({}), response: Type.Integer() }),
  get: defineRpc("users.user.get", { request: Signed, response: UserDto }),
  update: defineRpc("users.user.update", {
    request: Type.Object({ caller: Caller, user: UserUpdate }),
    response: UserDto,
  }),
  deleteSelf: defineRpc("users.user.delete-self", { request: Signed, response: Type.Null() }),
  delete: defineRpc("users.user.delete", {
    request: Type.Object({ caller: Caller, id: Type.Integer() }),
    response: Type.Null(),
  }),
  list: defineRpc("users.user.list", { request: Signed, response: Type.Array(UserDto) }),
  updateRole: defineRpc("users.user.update-role", {
    request: Type.Object({ caller: Caller, address: Type.String(), role: Type.String() }),
    response: UserDto,
  }),
} as const;

export const UsersEvents = {
  deleted: defineEvent("users.user.deleted", Type.Object({ userId: Id, address: Address })),
  roleChanged: defineEvent(
    "users.user.role-changed",
    Type.Object({
      userId: Id,
      address: Address,
      role: UserRole,
      previousRole: UserRole,
      changedBy: Type.String({ description: "admin user id, or 'chain'" }),
    }),
  ),
} as const;

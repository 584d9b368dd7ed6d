import type { ProjectsRpc, ResponseOf, UserRole, UsersRpc } from "@fundraise/protocol";
import type { User } from "./user.entity.ts";
import type { AccountRow } from "./user.repository.ts";

export type UserDtoOut = ResponseOf<typeof UsersRpc.get>;
export type UserAccountOut = ResponseOf<typeof UsersRpc.markVerified>;
export type Invitation = ResponseOf<typeof ProjectsRpc.pendingInvitations>[number];

/** A user as clients see it (UserDTO); `invitations` null when not asked for or not available. */
export function toUserDto(user: User, invitations: Invitation[] | null = null): UserDtoOut {
  return {
    id: user.id,
    name: user.name,
    surname: user.surname,
    address: user.address,
    mailAddress: user.mailAddress ?? null,
    username: user.username,
    role: user.role as UserRole,
    invitations,
  };
}

/** A user as the auth service needs it: with the verification state, never sent to clients. */
export function toUserAccount(user: AccountRow): UserAccountOut {
  return {
    id: user.id,
    address: user.address,
    username: user.username,
    name: user.name,
    surname: user.surname,
    mailAddress: user.mailAddress ?? null,
    role: user.role as UserRole,
    chainRole: (user.chainRole ?? null) as UserRole | null,
    isVerified: user.isVerified,
    version: Number(user.accountVersion),
  };
}

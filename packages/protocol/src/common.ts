import Type, { type Static } from "typebox";
import { Address } from "./address.ts";

/** Shared field shapes. Constraints here are the platform's, so the gateway, OpenAPI and the bus agree. */

export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: "database id" });
/** Addresses have their own module (address.ts): the schema, and the EIP-55 rule a pattern cannot express. */
export { Address };
export const FileHash = Type.String({
  pattern: "^[0-9A-F]{64}$",
  description: "sha2-256 digest of the project directory CID, 64 upper-case hex characters",
});
export const Bytes32Hex = Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" });
export const DateTime = Type.String({ format: "date-time", description: "ISO-8601 UTC" });
/** Null first: a coercing validator (the gateway's) then keeps `null` instead of turning it into "". */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([Type.Null(), schema]);

export const USER_ROLES = ["Admin", "Whitelist", "Viewer", "Base", "Blacklist"] as const;
export const UserRole = Type.Enum(USER_ROLES);
export type UserRole = (typeof USER_ROLES)[number];

export const PROJECT_STATUSES = ["Approved", "Pending", "Rejected"] as const;
export const ProjectStatus = Type.Enum(PROJECT_STATUSES);
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];

export const PERMISSION_ROLES = ["Owner", "Co-Owner", "Editor"] as const;
export const PermissionRole = Type.Enum(PERMISSION_ROLES);
export type PermissionRole = (typeof PERMISSION_ROLES)[number];

export const AUCTION_STATUSES = ["Off", "Running", "Paused", "Ended"] as const;
export const AuctionStatus = Type.Enum(AUCTION_STATUSES);
export type AuctionStatus = (typeof AUCTION_STATUSES)[number];

/**
 * Who is calling, as the gateway established it from a verified token (null: anonymous).
 * Services decide access from this, never from anything the client wrote in a body.
 */
export const Caller = Type.Object({
  userId: Id,
  username: Type.String(),
  address: Address,
  role: UserRole,
});
export type Caller = Static<typeof Caller>;
export const MaybeCaller = Type.Union([Caller, Type.Null()]);

import { type Caller, RPC_ROLES, type RpcDescriptor, roleAdmits } from "@fundraise/protocol";
import { UserErrors } from "./user.errors.ts";

/**
 * The users service's one role check: an RPC only some roles may call (protocol RPC_ROLES, the list its
 * gateway route admits too) refuses every other role with 403, before anything else.
 */
export function requireRole(rpc: RpcDescriptor, caller: Caller): void {
  if (!roleAdmits(rpc, caller.role)) throw UserErrors.roleOnly(RPC_ROLES[rpc.name] ?? []);
}

import type { Bus } from "@fundraise/bus";
import { ErrorCode, errors, type UserAccount, type UserRole, UsersRpc } from "@fundraise/protocol";
import type { Static } from "typebox";

type Account = Static<typeof UserAccount>;
interface Row extends Account {
  pendingUntil: Date | undefined;
}

/**
 * A stand-in for the users service (another team's work in progress): it answers the four UsersRpc calls
 * the auth service makes, over the real bus, from a Map, following their documented contract
 * (packages/protocol/src/users.ts). End-to-end tests with the real users service come separately.
 */
export interface UsersStandIn {
  rows: Map<number, Row>;
  calls: { register: unknown[]; byAddress: unknown[]; markVerified: unknown[]; setChainRole: unknown[] };
  /** Adds a user directly (a verified one unless told otherwise). */
  seed(user: Partial<Account> & { address: string }): Account;
  byAddress(address: string): Row | undefined;
}

let nextId = 1;

export async function serveUsersStandIn(bus: Bus): Promise<UsersStandIn> {
  const rows = new Map<number, Row>();
  const calls: UsersStandIn["calls"] = { register: [], byAddress: [], markVerified: [], setChainRole: [] };
  const find = (address: string) =>
    [...rows.values()].find((r) => r.address.toLowerCase() === address.toLowerCase());
  const account = (row: Row): Account => {
    const { pendingUntil: _, ...rest } = row;
    return rest;
  };

  await bus.serve(UsersRpc.register, async (request) => {
    calls.register.push(request);
    const clashes: [keyof Account, string, string][] = [
      ["address", ErrorCode.USER_ADDRESS_TAKEN, "address"],
      ["mailAddress", ErrorCode.USER_EMAIL_TAKEN, "e-mail address"],
      ["username", ErrorCode.USER_USERNAME_TAKEN, "username"],
    ];
    for (const [field, code, what] of clashes) {
      const value = String(request[field as keyof typeof request]).toLowerCase();
      const other = [...rows.values()].find((r) => String(r[field] ?? "").toLowerCase() === value);
      if (!other) continue;
      // An unverified registration whose link has expired does not block: it is replaced.
      if (!other.isVerified && other.pendingUntil && other.pendingUntil.getTime() < Date.now()) {
        rows.delete(other.id);
        continue;
      }
      throw errors.conflict(code, `This ${what} is already registered.`);
    }
    const id = nextId++;
    rows.set(id, {
      id,
      address: request.address,
      username: request.username,
      name: request.name,
      surname: request.surname,
      mailAddress: request.mailAddress,
      role: "Base",
      isVerified: false,
      pendingUntil: new Date(request.pendingUntil),
    });
    return { userId: id, replaced: false };
  });
  await bus.serve(UsersRpc.byAddress, async (request) => {
    calls.byAddress.push(request);
    const row = find(request.address);
    return row ? account(row) : null;
  });
  await bus.serve(UsersRpc.markVerified, async (request) => {
    calls.markVerified.push(request);
    const row = rows.get(request.userId);
    if (!row || row.mailAddress?.toLowerCase() !== request.mailAddress.toLowerCase()) {
      throw errors.notFound(ErrorCode.USER_NOT_FOUND, "No such user with this e-mail address.");
    }
    row.isVerified = true;
    row.pendingUntil = undefined;
    return account(row);
  });
  await bus.serve(UsersRpc.setChainRole, async (request) => {
    calls.setChainRole.push(request);
    const row = find(request.address);
    if (!row) return null;
    row.role = request.role as UserRole;
    return account(row);
  });

  return {
    rows,
    calls,
    seed(user) {
      const id = nextId++;
      const row: Row = {
        id,
        username: `user${id}`,
        name: "Test",
        surname: `Surname${id}`,
        mailAddress: `user${id}@example.org`,
        role: "Base",
        isVerified: true,
        pendingUntil: undefined,
        ...user,
      };
      rows.set(id, row);
      return account(row);
    },
    byAddress: find,
  };
}

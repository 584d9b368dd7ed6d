import {
  createMemoryStore,
  type Emitted,
  type MemoryTx,
  withCommitted,
} from "@fundraise/service-kit/testing";
import type { RoleChange } from "../users/role-change.entity.ts";
import type { User } from "../users/user.entity.ts";
import { UserErrors } from "../users/user.errors.ts";
import type { Sanction, UniqueField, UserRepository, UserTx } from "../users/user.repository.ts";

interface State {
  users: Map<number, User>;
  roleChanges: Omit<RoleChange, "id" | "at">[];
  sanctions: Map<string, Sanction>;
}

/**
 * FOR TESTS ONLY: the users repository in memory (service-kit's MemoryStore: a transaction commits as a
 * whole or not at all, one at a time), for use-case tests without Postgres; the SQL itself is the
 * integration suites'. The unique fields (address, e-mail, username, case-insensitively) are checked on
 * `save`, as the indexes would.
 */
export interface MemoryUsers extends UserRepository {
  /** The committed users, by id. */
  readonly users: Map<number, User>;
  readonly roleChanges: Omit<RoleChange, "id" | "at">[];
  /** Events of committed transactions, oldest first. */
  readonly events: Emitted[];
  /** Adds a committed user; `row` overrides the defaults of a verified Base user. */
  seed(row?: Partial<User>): User;
  /** The next transaction's commit fails with `error` (after its work resolved). */
  failNextCommit(error: Error): void;
}

const lower = (value: string | null | undefined) => value?.toLowerCase();
const TAKEN: Record<UniqueField, () => Error> = {
  address: UserErrors.addressTaken,
  mailAddress: UserErrors.emailTaken,
  username: UserErrors.usernameTaken,
};
const sorted = (users: Iterable<User>) => [...users].sort((a, b) => a.id - b.id);
const same = (field: UniqueField, value: string | undefined) => (user: User) =>
  value !== undefined && lower(user[field]) === lower(value);

export function createMemoryUsers(): MemoryUsers {
  const store = createMemoryStore<State>(
    { users: new Map(), roleChanges: [], sanctions: new Map() },
    (s) => ({
      users: new Map([...s.users].map(([id, user]) => [id, { ...user }])),
      roleChanges: [...s.roleChanges],
      sanctions: new Map(s.sanctions),
    }),
  );
  let nextId = 1;
  const newUser = (row: Partial<User>): User => {
    const id = nextId++;
    return {
      id,
      name: "Test",
      surname: "User",
      address: `0x${id.toString(16).padStart(40, "0")}`,
      mailAddress: `user${id}@example.org`,
      username: `user${id}`,
      role: "Base",
      isVerified: true,
      pendingUntil: null,
      proof: "nonce",
      chainRole: null,
      chainRoleBlock: null,
      chainRoleLogIndex: null,
      adminRoleAt: null,
      adminRoleBlock: null,
      accountVersion: 1,
      createdAt: new Date(),
      updatedAt: new Date(),
      ...row,
    } as User;
  };

  function txOf({ state: s, emit, claimOnce, onRollback }: MemoryTx<State>): UserTx {
    const all = () => sorted(s.users.values());
    return {
      lockById: async (id) => s.users.get(id) ?? null,
      lockByAddress: async (address) => all().find(same("address", address)) ?? null,
      lockByChainPosition: async (block, logIndex) =>
        all().filter((u) => Number(u.chainRoleBlock) === block && u.chainRoleLogIndex === logIndex),
      lockHolders: async (wanted, exceptId) =>
        all().filter(
          (u) =>
            u.id !== exceptId &&
            (Object.keys(wanted) as UniqueField[]).some((field) => same(field, wanted[field])(u)),
        ),
      lockAdmins: async () => all().flatMap((u) => (u.role === "Admin" ? [u.id] : [])),
      lockSignUp: async () => undefined,
      create(row) {
        const user = newUser(row);
        s.users.set(user.id, user);
        return user;
      },
      remove: (user) => void s.users.delete(user.id),
      recordRoleChange: (change) => void s.roleChanges.push(change),
      async setSanction(address, sanction) {
        if (sanction) s.sanctions.set(address.toLowerCase(), sanction);
        else s.sanctions.delete(address.toLowerCase());
      },
      sanctionOf: async (address) => s.sanctions.get(address.toLowerCase()) ?? null,
      async save() {
        for (const field of ["address", "mailAddress", "username"] as const) {
          const values = all().flatMap((user) => lower(user[field]) ?? []);
          if (new Set(values).size !== values.length) throw TAKEN[field]();
        }
      },
      emit: async (event, payload) => emit(event, payload),
      claimOnce: async (consumer, messageKey) => claimOnce(consumer, messageKey),
      onRollback,
    };
  }

  const committed = () => sorted(store.state.users.values());

  const repository: Omit<MemoryUsers, "users" | "roleChanges" | "events"> = {
    seed(row = {}) {
      const user = newUser(row);
      store.state.users.set(user.id, user);
      return user;
    },
    failNextCommit: (error) => store.failNextCommit(error),
    transaction: (work) => store.transaction((tx) => work(txOf(tx))),
    countVerified: async () => committed().filter((u) => u.isVerified).length,
    findById: async (id) => store.state.users.get(id) ?? null,
    findAccountByAddress: async (address) => committed().find(same("address", address)) ?? null,
    findByUsername: async (username) =>
      committed().find((u) => same("username", username)(u) && !(!u.isVerified && u.pendingUntil != null)) ??
      null,
    findByIds: async (ids) => committed().filter((u) => ids.includes(u.id)),
    listAll: async () => committed(),
  };
  return withCommitted(store, ["users", "roleChanges"], repository);
}

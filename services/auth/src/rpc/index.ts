import type { Bus } from "@fundraise/bus";
import { AuthRpc } from "@fundraise/protocol";
import type { KeyStore } from "../keys/key-store.ts";
import type { AccountChanges } from "../sessions/account-changes.ts";
import type { SessionStore } from "../sessions/session-store.ts";
import type { SignInService } from "../sign-in/sign-in.service.ts";
import type { SignUpService } from "../sign-up/sign-up.service.ts";

/** The auth service's RPC surface: each descriptor straight to its use case. */
export async function serveAuthRpc(
  bus: Bus,
  {
    signIn,
    signUp,
    keys,
    sessions,
    accounts,
  }: {
    signIn: SignInService;
    signUp: SignUpService;
    keys: KeyStore;
    sessions: SessionStore;
    accounts: AccountChanges;
  },
): Promise<void> {
  // Same answer shape whether the address is registered or not.
  await bus.serve(AuthRpc.nonce, ({ address, origin }) => signIn.issueNonce(address, origin));
  await bus.serve(AuthRpc.login, ({ login, origin }, ctx) => signIn.login(login, origin, ctx));
  await bus.serve(AuthRpc.register, ({ register, origin }, ctx) => signUp.register(register, origin, ctx));
  await bus.serve(AuthRpc.verifyEmail, ({ email, token }, ctx) => signUp.verifyEmail(email, token, ctx));
  // Every public key that may still verify a live token.
  await bus.serve(AuthRpc.jwks, () => keys.jwks());
  // The gateway found no session hash in Redis (Redis lost it).
  await bus.serve(AuthRpc.rebuildSession, ({ userId }, ctx) => sessions.rebuild(userId, ctx));
  // The users service, before an admin's role change or a deletion answers.
  await bus.serve(AuthRpc.applySession, (change) => accounts.apply(change));
}

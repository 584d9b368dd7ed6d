import type { Bus } from "@fundraise/bus";
import { AuthRpc } from "@fundraise/protocol";
import type { KeyStore } from "../keys/key-store.ts";
import type { SessionStore } from "../sessions/session-store.ts";
import type { AuthService } from "../sign-in/auth.service.ts";
import { issueNonce } from "./issue-nonce.ts";
import { jwks } from "./jwks.ts";
import { login } from "./login.ts";
import { rebuildSession } from "./rebuild-session.ts";
import { register } from "./register.ts";
import { verifyEmail } from "./verify-email.ts";

/** The auth service's RPC surface: descriptor → handler. */
export async function serveAuthRpc(
  bus: Bus,
  auth: AuthService,
  keys: KeyStore,
  sessions: SessionStore,
): Promise<void> {
  await bus.serve(AuthRpc.nonce, issueNonce(auth));
  await bus.serve(AuthRpc.login, login(auth));
  await bus.serve(AuthRpc.register, register(auth));
  await bus.serve(AuthRpc.verifyEmail, verifyEmail(auth));
  await bus.serve(AuthRpc.jwks, jwks(keys));
  await bus.serve(AuthRpc.rebuildSession, rebuildSession(sessions));
}

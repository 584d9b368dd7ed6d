import type { RpcHandler } from "@fundraise/bus";
import type { AuthRpc } from "@fundraise/protocol";
import type { KeyStore } from "../keys/key-store.ts";

/** GET /.well-known/jwks.json: every public key that may still verify a live token. */
export const jwks =
  (keys: KeyStore): RpcHandler<typeof AuthRpc.jwks> =>
  async () =>
    keys.jwks();

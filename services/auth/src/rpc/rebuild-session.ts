import type { RpcHandler } from "@fundraise/bus";
import { type AuthRpc, ErrorCode, errors } from "@fundraise/protocol";
import type { SessionStore } from "../sessions/session-store.ts";

/** The gateway found no session hash in Redis (Redis lost it): rebuilt from Postgres. */
export const rebuildSession =
  (sessions: SessionStore): RpcHandler<typeof AuthRpc.rebuildSession> =>
  async ({ userId }, ctx) => {
    try {
      const state = await sessions.rebuild(userId);
      ctx.log.info({ userId }, "session state rebuilt from Postgres");
      return state;
    } catch (cause) {
      throw errors.unavailable(ErrorCode.SERVICE_UNAVAILABLE, "Sessions cannot be checked right now.", {
        cause,
      });
    }
  };

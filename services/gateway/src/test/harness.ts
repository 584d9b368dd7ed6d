import { randomBytes } from "node:crypto";
import type { Bus } from "@fundraise/bus";
import { createInMemoryBus } from "@fundraise/bus/testing";
import type { Ipfs } from "@fundraise/ipfs";
import { AuthRpc, type Caller, ProjectsRpc, type UserRole } from "@fundraise/protocol";
import type { Logger } from "@fundraise/service-kit";
import { silentLogger } from "@fundraise/service-kit/testing";

import { Redis } from "ioredis";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { buildGateway, type Gateway } from "../app.ts";
import { loadConfig } from "../config.ts";
import { startTestIpfs, type TestIpfs } from "./ipfs.ts";
import { createMemoryLiveLog, type MemoryLiveLog } from "./live-log.ts";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** An ES256 key standing in for the auth service's signing key, with its JWKS. */
export async function createTestSigner() {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = randomBytes(8).toString("hex");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  return {
    jwks: { keys: [jwk as Record<string, unknown>] },
    async sign(
      claims: { userId: number; role: UserRole; username?: string; address?: string; sv?: number },
      options: { expiresIn?: string | number; issuedAt?: number; issuer?: string; audience?: string } = {},
    ) {
      const jwt = new SignJWT({
        nameid: String(claims.userId),
        unique_name: claims.username ?? `user${claims.userId}`,
        role: claims.role,
        family_name: "Tester",
        address: claims.address ?? "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
        ...(claims.sv === undefined ? {} : { sv: claims.sv }),
      })
        .setProtectedHeader({ alg: "ES256", kid })
        .setSubject(String(claims.userId))
        .setIssuer(options.issuer ?? "fundraise-auth")
        .setAudience(options.audience ?? "fundraise")
        .setJti(randomBytes(8).toString("hex"))
        .setExpirationTime(options.expiresIn ?? "2h");
      if (options.issuedAt !== undefined) jwt.setIssuedAt(options.issuedAt);
      else jwt.setIssuedAt();
      return jwt.sign(privateKey);
    },
  };
}

export interface Harness {
  app: Gateway;
  /** What `GET /events` streams: tests append events as the bus would publish them. */
  liveLog: MemoryLiveLog;
  bus: ReturnType<typeof createInMemoryBus>;
  /** The IPFS node uploads go to, and what the gateway added to it (test/ipfs.ts). */
  ipfs: TestIpfs;
  redis: Redis;
  prefix: string;
  signer: Awaited<ReturnType<typeof createTestSigner>>;
  close(): Promise<void>;
}

/**
 * A gateway on the in-memory bus and the real Redis, under a key prefix of its own; silent unless a test
 * passes the logger it reads.
 */
export async function createHarness(
  env: Record<string, string> = {},
  bus?: Bus,
  options: { log?: Logger; ipfs?: Ipfs } = {},
): Promise<Harness> {
  const prefix = `test:${randomBytes(6).toString("hex")}:`;
  const config = loadConfig({ REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: "silent", ...env });
  const redis = new Redis(REDIS_URL, { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
  const memoryBus = createInMemoryBus();
  const signer = await createTestSigner();
  await memoryBus.serve(AuthRpc.jwks, async () => signer.jwks);
  // The projects service's answer for lists no view shares (no version, no ETag); tests serve their own.
  await memoryBus.serve(ProjectsRpc.listTag, async () => null);
  // The auth service's answer for a user who has no stored session state; tests serve their own to differ.
  await memoryBus.serve(AuthRpc.rebuildSession, async () => ({
    role: null,
    version: 0,
    revokedBelow: 0,
    deleted: false,
  }));
  const ipfs = await startTestIpfs();
  const liveLog = createMemoryLiveLog();
  const app = await buildGateway({
    config,
    bus: bus ?? memoryBus,
    redis,
    log: options.log ?? silentLogger(),
    ipfs: options.ipfs ?? ipfs.ipfs,
    liveLog,
  });
  await app.ready();
  await app.live.start();
  return {
    app,
    liveLog,
    bus: memoryBus,
    ipfs,
    redis,
    prefix,
    signer,
    async close() {
      await app.close();
      await ipfs.stop();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

/** The users service's answer to a caller's `users.get` in these tests: Ada Lovelace, no invitations. */
export const userOf = (caller: Caller) => ({
  id: caller.userId,
  name: "Ada",
  surname: "Lovelace",
  address: caller.address,
  mailAddress: "ada@example.org",
  username: caller.username,
  role: caller.role,
  invitations: [],
});

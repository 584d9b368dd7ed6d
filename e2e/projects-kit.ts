/**
 * What the project e2e files share: users with a role from the chain (as in production: the registry's
 * admin role and user statuses, read at login), project content and its expected IPFS identity, the IPFS
 * stand-in's pins, and the chain facts the chain-indexer will publish (it does not exist yet: these tests
 * publish them on the bus, as the projects service's own tests do).
 */
import { randomBytes } from "node:crypto";
import { createAmqpBus } from "@fundraise/bus";
import { ADMIN_ROLE, confirm, createProvider, registryAt, UserStatus } from "@fundraise/contracts";
import { cidOfDigestHex, digestHexOf, kuboDirectoryCidOf } from "@fundraise/ipfs-node";
import { ChainEvents } from "@fundraise/protocol";
import { silentLogger } from "@fundraise/service-kit";
import { Wallet } from "ethers";
import { expect } from "vitest";
import type { Answer, createClient } from "./client.ts";
import type { SharedSystem } from "./shared.ts";

export type ChainRole = "Base" | "Blacklist" | "Whitelist" | "Viewer" | "Admin";

export interface User {
  wallet: Wallet;
  token: string;
  id: number;
  username: string;
}

type Client = ReturnType<typeof createClient>;

/**
 * Signed-up users with a chain role. Sign-ups and sign-ins run in parallel; the chain transactions one at
 * a time (they are all sent by this file's chain account).
 */
export function createPeople(sys: () => SharedSystem, client: Client) {
  let chain: Promise<unknown> = Promise.resolve();

  async function setChainRole(address: string, role: ChainRole) {
    const status = {
      Base: undefined,
      Whitelist: UserStatus.Whitelisted,
      Blacklist: UserStatus.Blacklisted,
      Viewer: UserStatus.Viewer,
      Admin: undefined,
    }[role];
    if (role === "Base") return;
    const send = chain.then(async () => {
      const provider = createProvider(sys().anvil.url, sys().anvil.chainId);
      try {
        const registry = registryAt(sys().deployment.registry, new Wallet(sys().chainAdminKey, provider));
        if (status !== undefined) await confirm(registry.getFunction("editUserStatus")(address, status));
        if (role === "Admin") await confirm(registry.getFunction("grantRole")(ADMIN_ROLE, address));
      } finally {
        provider.destroy();
      }
    });
    chain = send.catch(() => {});
    await send;
  }

  async function newUser(role: ChainRole): Promise<User> {
    const { wallet, userId, username } = await client.signedUpUser();
    await setChainRole(wallet.address, role);
    const login = await client.login(wallet);
    expect(login.status, `${role}: ${JSON.stringify(login.body)}`).toBe(200);
    return { wallet, token: login.body.data as string, id: userId, username };
  }

  return { newUser };
}

/** The keys of a ProjectDTO as the gateway writes them (rules.md §1.2, §4.1). */
export const PROJECT_DTO_KEYS = [
  "auctionStatus",
  "date",
  "fileHash",
  "imageUrl",
  "isAuctionCreated",
  "isAuctionStarted",
  "markDown",
  "projectDescription",
  "projectID",
  "projectName",
  "proposerAddress",
  "rating",
  "status",
  "viewerAccepted",
  "viewerAcceptedAddress",
].sort();

export interface ProjectDto {
  projectID: number;
  projectName: string;
  date: string | null;
  isAuctionCreated: boolean;
  isAuctionStarted: boolean;
  auctionStatus: string | null;
  projectDescription: string | null;
  imageUrl: string | null;
  rating: number;
  status: string;
  markDown: string;
  fileHash: string;
  proposerAddress: string | null;
  viewerAccepted: boolean;
  viewerAcceptedAddress: string | null;
  fileHex?: string;
}

/** The envelope of rules.md §1.1 with this status: exactly three keys; a failure has a message. */
export function expectEnvelope(res: Answer, status: number, what = ""): void {
  expect(res.status, `${what} ${JSON.stringify(res.body)}`).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(["data", "message", "success"]);
  expect(res.body.success, what).toBe(status < 300);
  if (status >= 300) {
    expect(res.body.data, what).toBeNull();
    expect(typeof res.body.message, what).toBe("string");
  }
}

/** A whitepaper (and an image) no other project has. */
export function newContent(label: string, image = true): { file: Buffer; image?: Buffer } {
  const file = Buffer.from(`%PDF-1.4 whitepaper of ${label} ${randomBytes(16).toString("hex")}\n`);
  if (!image) return { file };
  // A PNG signature and random bytes: the platform stores an image as bytes, it does not decode it.
  return { file, image: Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(200)]) };
}

/** Lower-case hex without `0x`, as the web client sends files. */
export const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** What `ipfs add --wrap-with-directory` gives for this content, computed without any node. */
export async function identityOf(content: { file: Uint8Array; image?: Uint8Array | undefined }) {
  const cid = await kuboDirectoryCidOf(
    content.image ? { whitepaper: content.file, image: content.image } : { whitepaper: content.file },
  );
  return { cid: cid.toString(), fileHash: digestHexOf(cid) };
}

/** The CIDv0 of a project's directory, from its `fileHash`. */
export const cidOfFileHash = (fileHash: string) => cidOfDigestHex(fileHash).toString();

/** Whether the IPFS stand-in holds a recursive pin on this CID. */
export async function isPinned(ipfsUrl: string, cid: string): Promise<boolean> {
  const res = await fetch(`${ipfsUrl}/api/v0/pin/ls?arg=${cid}&type=recursive`, { method: "POST" });
  await res.arrayBuffer();
  return res.status === 200;
}

/** The bytes at an IPFS path, read from the node (Kubo RPC `cat`). */
export async function catPath(ipfsUrl: string, path: string): Promise<Buffer> {
  const res = await fetch(`${ipfsUrl}/api/v0/cat?arg=${encodeURIComponent(path)}`, { method: "POST" });
  const body = Buffer.from(await res.arrayBuffer());
  expect(res.status, body.toString()).toBe(200);
  return body;
}

/**
 * A ProjectEvaluation fact for a project's hash, as the chain-indexer will publish it once it exists
 * (`chain.project.evaluated`; the projects service applies the first evaluation of a hash).
 */
export async function publishEvaluation(sys: SharedSystem, fileHash: string, isApproved: boolean) {
  const bus = await createAmqpBus({
    url: sys.amqpUrl,
    service: "e2e-chain-indexer-stand-in",
    logger: silentLogger(),
  });
  const hex32 = () => `0x${randomBytes(32).toString("hex")}`;
  try {
    await bus.publish(ChainEvents.projectEvaluated, {
      origin: {
        chainId: sys.anvil.chainId,
        txHash: hex32(),
        logIndex: 0,
        blockNumber: 1,
        blockHash: hex32(),
      },
      projectHash: `0x${fileHash.toLowerCase()}`,
      isApproved,
    });
  } finally {
    await bus.close();
  }
}

/**
 * The simulated users' mixed load: sign-ins, lists, Adds with small files, ratings, invitations and
 * their replies, each user in a loop of its own; and what each write got acknowledged (a 2xx), for the
 * checks after the run.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { ChaosClient, Worker } from "./client.ts";
import { pick, sleep } from "./util.ts";

/** What was acknowledged, by Idempotency-Key (Adds) or by `projectID:userId`. */
export interface Acknowledged {
  adds: Map<string, { projectID: number; name: string; fileHash: string; owner: Worker }>;
  ratings: Map<string, { projectID: number; userId: number; value: number }>;
  invitations: Map<string, { projectID: number; invitee: Worker }>;
  accepts: Map<string, { projectID: number; invitee: Worker }>;
  /** Chain status set last by a confirmed transaction, by address. */
  chainStatus: Map<string, number>;
}

export function nothingAcknowledged(): Acknowledged {
  return {
    adds: new Map(),
    ratings: new Map(),
    invitations: new Map(),
    accepts: new Map(),
    chainStatus: new Map(),
  };
}

export class MixedLoad {
  constructor(
    private readonly client: ChaosClient,
    private readonly acknowledged: Acknowledged,
    /** The users that invite one another. */
    private readonly workers: Worker[],
  ) {}

  /** One user's loop until `stopAt`: a request at a time, chosen at random by weight. */
  async run(w: Worker, stopAt: number): Promise<void> {
    while (Date.now() < stopAt) {
      const roll = randomInt(100);
      const deadline = Date.now() + 30_000;
      if (roll < 10) {
        const token = await this.client.signIn(w);
        if (token) w.token = token;
      } else if (roll < 35) {
        await this.client.call("GET", "/Project/Get/All", { ip: w.ip, token: w.token });
      } else if (roll < 45) {
        await this.client.call("GET", "/Project/GetAllPermissioned/false", { ip: w.ip, token: w.token });
      } else if (roll < 65) {
        await this.addProject(w, deadline);
      } else if (roll < 85) {
        await this.rate(w, deadline);
      } else {
        await this.invite(w, deadline);
      }
      await sleep(100);
    }
  }

  /** An Add with a small file of its own; true once acknowledged. */
  async addProject(w: Worker, deadline: number): Promise<boolean> {
    const name = `Chaos ${randomBytes(6).toString("hex")}`;
    const file = Buffer.from(`%PDF-1.4 chaos ${name} ${randomBytes(24).toString("hex")}\n`);
    const { res, key } = await this.client.write(
      w,
      "POST",
      "/Project/Add",
      { projectName: name, fileHex: file.toString("hex") },
      deadline,
    );
    if (res.status !== 201 && res.status !== 200) return false;
    const dto = res.body?.data as { projectID: number; fileHash: string; projectName: string };
    this.acknowledged.adds.set(key, { projectID: dto.projectID, name, fileHash: dto.fileHash, owner: w });
    return true;
  }

  private async rate(w: Worker, deadline: number): Promise<void> {
    const { adds, ratings } = this.acknowledged;
    const candidates = [...adds.values()].filter((p) => !ratings.has(`${p.projectID}:${w.userId}`));
    const project = pick(candidates);
    if (!project) return;
    const value = randomInt(0, 11) / 2;
    const { res } = await this.client.write(
      w,
      "PUT",
      `/Project/Rate/${project.projectID}/${value}`,
      undefined,
      deadline,
    );
    if (res.status === 200)
      ratings.set(`${project.projectID}:${w.userId}`, {
        projectID: project.projectID,
        userId: w.userId,
        value,
      });
  }

  /** An invitation to one of the user's projects, and most of the time the invitee's acceptance. */
  private async invite(w: Worker, deadline: number): Promise<void> {
    const { adds, invitations, accepts } = this.acknowledged;
    const own = [...adds.values()].filter((p) => p.owner === w);
    const project = pick(own);
    const invitee = pick(this.workers.filter((o) => o !== w));
    if (!project || !invitee || invitations.has(`${project.projectID}:${invitee.userId}`)) return;
    const { res } = await this.client.write(
      w,
      "PUT",
      "/User/Invite/",
      { projectID: project.projectID, username: invitee.username, role: "Editor" },
      deadline,
    );
    if (res.status !== 201) return;
    invitations.set(`${project.projectID}:${invitee.userId}`, { projectID: project.projectID, invitee });
    if (randomInt(3) === 0) return; // some stay pending
    const reply = await this.client.write(
      invitee,
      "POST",
      "/User/InvitationReply",
      { projectID: project.projectID, Username: invitee.username, Role: "Editor", IsAccepted: true },
      deadline,
    );
    if (reply.res.status === 200)
      accepts.set(`${project.projectID}:${invitee.userId}`, { projectID: project.projectID, invitee });
  }
}

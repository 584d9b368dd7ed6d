/** Chain role changes during the run: one sender (account 0, the registry's admin), one transaction at a time. */
import { confirm, type RegistryContract, UserStatus } from "@fundraise/contracts";
import { Wallet } from "ethers";
import type { Worker } from "./client.ts";
import { type ChaosReport, noteExample } from "./report.ts";
import { pick, sleep } from "./util.ts";

export class ChainRoleChanges {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly registry: RegistryContract,
    /** Chain status set last by a confirmed transaction, by address (lower case). */
    private readonly chainStatus: Map<string, number>,
    private readonly report: ChaosReport,
  ) {}

  /** Sends the change after every earlier one; resolves once it is confirmed (and counted). */
  setStatus(address: string, status: number): Promise<void> {
    const sent = this.queue.then(async () => {
      await confirm(this.registry.getFunction("editUserStatus")(address, status));
      this.chainStatus.set(address.toLowerCase(), status);
      this.report.acknowledged.roleChanges += 1;
    });
    this.queue = sent.catch(() => {});
    return sent;
  }

  /** Until `stopAt`: the workers' and a few bystanders' statuses changed at random, one every 1.5 s. */
  async run(workers: Worker[], stopAt: number): Promise<void> {
    const bystanders = Array.from({ length: 4 }, () => Wallet.createRandom().address);
    const addresses = [...workers.map((w) => w.wallet.address), ...bystanders];
    while (Date.now() < stopAt) {
      const address = pick(addresses) as string;
      const now = this.chainStatus.get(address.toLowerCase()) ?? UserStatus.Default;
      const choices = [UserStatus.Default, UserStatus.Whitelisted, UserStatus.Viewer].filter(
        (s) => s !== now,
      );
      await this.setStatus(address, pick(choices) as number).catch((err: Error) =>
        noteExample(this.report, `chain transaction failed: ${err.message}`),
      );
      await sleep(1_500);
    }
  }

  /** Resolves once the changes sent so far are settled (confirmed or failed). */
  settled(): Promise<unknown> {
    return this.queue;
  }
}

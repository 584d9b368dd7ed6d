/** Probes: the first success on a fault's path, which its recovery time is measured to. */
import { UserStatus } from "@fundraise/contracts";
import { Wallet } from "ethers";
import type { ChainRoleChanges } from "./chain-load.ts";
import type { CallOptions, ChaosClient, Worker } from "./client.ts";
import type { MixedLoad } from "./load.ts";
import { sleep } from "./util.ts";

export type Probe = () => Promise<boolean>;

/** Milliseconds from `from` to the probe's first success, or null when none came within `limitMs`. */
export async function firstSuccess(probe: Probe, from: number, limitMs = 30_000): Promise<number | null> {
  while (Date.now() - from < limitMs) {
    if (await probe().catch(() => false)) return Date.now() - from;
    await sleep(100);
  }
  return null;
}

/** The probes, as a user of their own (`prober`, outside the load) makes them. */
export class Probes {
  constructor(
    private readonly client: ChaosClient,
    private readonly load: MixedLoad,
    private readonly chain: ChainRoleChanges,
    readonly prober: Worker,
  ) {}

  /** A read through one gateway. */
  gateway(gateway: string): Probe {
    return () => this.answers("/user/learnusercount", { gateway });
  }

  readonly add: Probe = async () => this.load.addProject(this.prober, Date.now());

  readonly signIn: Probe = async () => {
    const token = await this.client.signIn(this.prober);
    if (!token) return false;
    this.prober.token = token;
    return this.answers("/Project/GetAllPermissioned/false", { token });
  };

  /** A chain change through the index: a fresh address whitelisted, until the gateway says so. */
  indexed(): Probe {
    const address = Wallet.createRandom().address;
    const sent = this.chain.setStatus(address, UserStatus.Whitelisted).then(
      () => true,
      () => false,
    );
    return async () =>
      (await sent) &&
      (await this.client.call("GET", `/EventDebug/Whitelisted/${address}`, { ip: this.prober.ip })).body
        ?.data === true;
  }

  /** A request that passes through the service (any instance of it). */
  service(service: string): Probe {
    const probeFor: Record<string, () => Probe> = {
      users: () => () => this.answers("/user/learnusercount"),
      auth: () => () => this.answers(`/Authentication/GetNonce/${this.prober.wallet.address}`),
      projects: () => () => this.answers("/Project/Get/All"),
      storage: () => this.add,
      "chain-indexer": () => this.indexed(),
    };
    return (probeFor[service] as () => Probe)();
  }

  /** Whether a GET as the prober is answered 200. */
  private async answers(path: string, opts: Pick<CallOptions, "gateway" | "token"> = {}): Promise<boolean> {
    return (await this.client.call("GET", path, { ...opts, ip: this.prober.ip })).status === 200;
  }
}

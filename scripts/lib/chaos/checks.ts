/**
 * The checks after the load stopped: everything acknowledged read back (lost), rows that exist twice
 * (duplicated), projects without an Owner or with a rating off its mean, and the index against the chain.
 */
import { eventByTopic, UserStatus } from "@fundraise/contracts";
import { cidOfDigestHex } from "@fundraise/ipfs-node";
import type { ChaosClient, Worker } from "./client.ts";
import type { Acknowledged } from "./load.ts";
import { firstSuccess } from "./probes.ts";
import type { ChaosSystem } from "./replicas.ts";
import { type ChaosReport, noteExample } from "./report.ts";
import { sleep } from "./util.ts";

export interface CheckContext {
  system: ChaosSystem;
  client: ChaosClient;
  acknowledged: Acknowledged;
  /** The user the probes ran as: asks the gateway about whitelist statuses. */
  prober: Worker;
  report: ChaosReport;
}

export async function checkAfterRun(ctx: CheckContext): Promise<void> {
  const { system, acknowledged, report } = ctx;
  // The index catches up with the chain first (every role change confirmed on chain).
  const head = await system.provider.getBlockNumber();
  await firstSuccess(async () => {
    const res = await fetch(`${system.sys.gatewayUrl}/EventDebug/Debug`);
    await res.arrayBuffer();
    return Number(res.headers.get("x-indexed-block")) >= head;
  }, Date.now());
  // Then the facts reach their consumers (the projects service's outbox, the bus): quiet for a moment.
  await sleep(2_000);

  report.acknowledged.adds = acknowledged.adds.size;
  report.acknowledged.ratings = acknowledged.ratings.size;
  report.acknowledged.invitations = acknowledged.invitations.size;
  report.acknowledged.accepts = acknowledged.accepts.size;

  await checkAdds(ctx);
  await checkRatingsAndMemberships(ctx);
  await countDuplicatesAndStrays(ctx);
  await compareIndexWithChain(ctx, head);
}

/** Rows of a query on the run's database. */
async function rows<T>(system: ChaosSystem, text: string, values: unknown[] = []): Promise<T[]> {
  return (await system.sql.query(text, values)).rows as T[];
}

/** Each acknowledged Add read back by its owner, its content pinned; one project per Idempotency-Key. */
async function checkAdds({ system, client, acknowledged, report }: CheckContext): Promise<void> {
  const byId = new Map<number, string>();
  const fresh = new Map<Worker, string>();
  for (const [key, add] of acknowledged.adds) {
    const other = byId.get(add.projectID);
    if (other !== undefined && other !== key) report.duplicated.sameKeyOtherProject += 1;
    byId.set(add.projectID, key);
    let token = fresh.get(add.owner);
    if (token === undefined) {
      token = (await client.signIn(add.owner, system.sys.gatewayUrl)) ?? add.owner.token;
      fresh.set(add.owner, token);
    }
    const read = await client.call("GET", `/Project/Get/${add.projectID}`, { token, ip: add.owner.ip });
    const dto = read.body?.data as { projectName?: string; fileHash?: string } | undefined;
    if (read.status !== 200 || dto?.projectName !== add.name || dto?.fileHash !== add.fileHash) {
      report.lost.adds += 1;
      noteExample(
        report,
        `lost Add ${add.projectID} ${add.name}: ${read.status} ${JSON.stringify(read.body)}`,
      );
    }
    const cid = cidOfDigestHex(add.fileHash).toString();
    const pin = await fetch(`${system.sys.ipfsUrl}/api/v0/pin/ls?arg=${cid}&type=recursive`, {
      method: "POST",
    });
    await pin.arrayBuffer();
    if (pin.status !== 200) {
      report.lost.pins += 1;
      noteExample(report, `Add ${add.projectID}: its content ${cid} is not pinned`);
    }
  }
}

/** Each acknowledged rating, invitation and acceptance as the database holds it. */
async function checkRatingsAndMemberships({ system, acknowledged, report }: CheckContext): Promise<void> {
  const ratingRows = await rows<{ project_id: number; user_id: number; value: number }>(
    system,
    "select project_id, user_id, value from projects.rating",
  );
  const ratingOf = new Map(ratingRows.map((r) => [`${r.project_id}:${r.user_id}`, Number(r.value)]));
  for (const [key, r] of acknowledged.ratings) {
    if (ratingOf.get(key) !== r.value) {
      report.lost.ratings += 1;
      noteExample(report, `lost rating ${key}=${r.value}: stored ${ratingOf.get(key)}`);
    }
  }
  const permissions = await rows<{ project_id: number; user_id: number; is_accepted: boolean }>(
    system,
    "select project_id, user_id, is_accepted from projects.permission",
  );
  const permissionOf = new Map(permissions.map((p) => [`${p.project_id}:${p.user_id}`, p]));
  for (const key of acknowledged.invitations.keys()) {
    if (!permissionOf.has(key)) {
      report.lost.invitations += 1;
      noteExample(report, `lost invitation ${key}`);
    }
  }
  for (const key of acknowledged.accepts.keys()) {
    if (permissionOf.get(key)?.is_accepted !== true) {
      report.lost.accepts += 1;
      noteExample(report, `lost acceptance ${key}`);
    }
  }
}

/** Rows the database holds twice: the query that counts them, by the report's name for them. */
const DUPLICATE_QUERIES: [Exclude<keyof ChaosReport["duplicated"], "sameKeyOtherProject">, string][] = [
  ["projects", "select count(*) - count(distinct (proposer_address, file_hash)) as n from projects.project"],
  ["memberships", "select count(*) - count(distinct (project_id, user_id)) as n from projects.permission"],
  [
    "owners",
    "select count(*) as n from (select project_id from projects.permission where role = 'Owner' group by project_id having count(*) > 1) t",
  ],
  ["ratings", "select count(*) - count(distinct (project_id, user_id)) as n from projects.rating"],
  ["users", 'select count(*) - count(distinct lower(address)) as n from users."user"'],
  ["facts", "select count(*) - count(distinct (chain_id, tx_hash, log_index)) as n from projects.chain_fact"],
  [
    "indexedLogs",
    "select count(*) - count(distinct (chain_id, tx_hash, log_index)) as n from chain_indexer.log",
  ],
];

/** Rows the database holds twice, projects without an Owner, and project ratings off their mean. */
async function countDuplicatesAndStrays({ system, report }: CheckContext): Promise<void> {
  const one = async (text: string) => Number((await rows<{ n: string }>(system, text))[0]?.n ?? 0);
  for (const [name, query] of DUPLICATE_QUERIES) report.duplicated[name] = await one(query);
  report.projectsWithoutOwner = await one(
    "select count(*) as n from projects.project p where not exists (select 1 from projects.permission o where o.project_id = p.id and o.role = 'Owner')",
  );
  report.ratingMeansOff = await one(
    "select count(*) as n from projects.project p where abs(p.rating - coalesce((select avg(value) from projects.rating r where r.project_id = p.id), 0)) > 1e-9",
  );
}

/** The index against the chain up to `head`: every followed log once, and each address's whitelist status. */
async function compareIndexWithChain(ctx: CheckContext, head: number): Promise<void> {
  const { system, client, acknowledged, prober, report } = ctx;
  const { sys, provider } = system;
  const chainLogs = await provider.getLogs({
    address: [sys.deployment.registry, sys.deployment.factory],
    fromBlock: sys.deployment.startBlock,
    toBlock: head,
  });
  const onChain = new Set(
    chainLogs
      .filter((l) => eventByTopic.has(l.topics[0] as string))
      .map((l) => `${l.transactionHash.toLowerCase()}:${l.index}`),
  );
  const indexed = await rows<{ tx_hash: string; log_index: number; block_number: string }>(
    system,
    "select tx_hash, log_index, block_number from chain_indexer.log where block_number <= $1",
    [head],
  );
  const inIndex = new Set(indexed.map((l) => `${l.tx_hash.toLowerCase()}:${l.log_index}`));
  report.index.chainLogs = onChain.size;
  report.index.indexedLogs = indexed.length;
  // Logs the indexer does not follow (role grants, say) are on chain but not in the index: only the
  // followed events count (topic 0).
  for (const l of chainLogs) {
    const key = `${l.transactionHash.toLowerCase()}:${l.index}`;
    if (eventByTopic.has(l.topics[0] as string) && !inIndex.has(key)) report.index.missing += 1;
  }
  for (const key of inIndex) if (!onChain.has(key)) report.index.extra += 1;
  for (const [address, status] of acknowledged.chainStatus) {
    const res = await client.call("GET", `/EventDebug/Whitelisted/${address}`, { ip: prober.ip });
    if (res.body?.data !== (status === UserStatus.Whitelisted)) {
      report.index.whitelistOff += 1;
      noteExample(
        report,
        `Whitelisted/${address}: ${JSON.stringify(res.body?.data)}, chain status ${status}`,
      );
    }
  }
  if (report.index.missing > 0) noteExample(report, `logs on chain not indexed: ${report.index.missing}`);
}

import type { ChainEventName } from "@fundraise/contracts";
import { enqueueMany, type SqlExecutor } from "@fundraise/outbox";
import { ChainEvents } from "@fundraise/protocol";
import type { DecodedLog } from "./decode.ts";
import { type ChainState, FACTS_OF_EVENT, type Fact, factsOf, originOf } from "./facts.ts";

export const SCHEMA = "chain_indexer";

export interface BlockRef {
  number: number;
  /** null: unknown (the block before the deployment's start block). */
  hash: string | null;
}

/** A connection that can run a transaction: the writer's own, which also holds the writer lock. */
export type TxClient = SqlExecutor;

/**
 * Every write of the index (and the reads the writer needs), on the writer's connection. Each method that
 * changes anything is one transaction: logs, block hashes, cursor and the outbox rows of their facts commit
 * together, so a crash at any point leaves either all of a range or none of it.
 */
export interface IndexStore {
  readCursor(): Promise<BlockRef | null>;
  /** Auctions the factory created so far: auction address → project hash. */
  knownAuctions(): Promise<Map<string, string>>;
  /** Kept block hashes, newest first. */
  storedBlocks(): Promise<BlockRef[]>;
  /** Stores a range's logs (each once) and publishes their facts; moves the cursor to `cursor`. */
  commitRange(range: {
    logs: DecodedLog[];
    cursor: BlockRef;
    blocks: BlockRef[];
    /** Block hashes below this number are dropped (outside the unfinalized window). */
    keepFrom: number;
    auctions: ReadonlyMap<string, string>;
  }): Promise<{ stored: number; facts: number }>;
  /** Deletes what blocks above `ancestor` produced, retracts their facts and moves the cursor back. */
  rollback(ancestor: BlockRef): Promise<{ removed: number; retracted: number }>;
}

const POSITION = "(block_number, log_index) <= ($3, $4)";

export function createIndexStore(client: TxClient, chainId: number): IndexStore {
  async function transaction<T>(work: () => Promise<T>): Promise<T> {
    await client.query("BEGIN");
    try {
      const result = await work();
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  }

  /** The chain's state at a log, read from the logs stored so far (this transaction's included). */
  const stateWith = (auctions: ReadonlyMap<string, string>): ChainState => ({
    async isAdmin(address, at) {
      const { rows } = await client.query(
        `select args->>'to' = $2 as admin from ${SCHEMA}.log
         where chain_id = $1 and event = 'AdminChange' and (args->>'to' = $2 or args->>'from' = $2)
           and ${POSITION}
         order by block_number desc, log_index desc limit 1`,
        [chainId, address, at.blockNumber, at.logIndex],
      );
      return rows[0]?.admin === true;
    },
    async statusOf(address, at) {
      const { rows } = await client.query(
        `select (args->>'newStatus')::int as status from ${SCHEMA}.log
         where chain_id = $1 and event = 'UserStatusChanged' and args->>'user' = $2 and ${POSITION}
         order by block_number desc, log_index desc limit 1`,
        [chainId, address, at.blockNumber, at.logIndex],
      );
      return Number(rows[0]?.status ?? 0);
    },
    async projectOfAuction(auction) {
      return auctions.get(auction) ?? null;
    },
  });

  async function upsertCursor(cursor: BlockRef): Promise<void> {
    await client.query(
      `insert into ${SCHEMA}.cursor (chain_id, block_number, block_hash, updated_at) values ($1, $2, $3, now())
       on conflict (chain_id) do update set block_number = excluded.block_number,
         block_hash = excluded.block_hash, updated_at = excluded.updated_at`,
      [chainId, cursor.number, cursor.hash],
    );
  }

  return {
    async readCursor() {
      const { rows } = await client.query(
        `select block_number, block_hash from ${SCHEMA}.cursor where chain_id = $1`,
        [chainId],
      );
      const row = rows[0];
      return row
        ? { number: Number(row.block_number), hash: (row.block_hash as string | null) ?? null }
        : null;
    },

    async knownAuctions() {
      const { rows } = await client.query(
        `select args->>'auction' as auction, args->>'fileHash' as hash from ${SCHEMA}.log
         where chain_id = $1 and event = 'CreateAuctionEvent'`,
        [chainId],
      );
      return new Map(rows.map((r) => [r.auction as string, r.hash as string]));
    },

    async storedBlocks() {
      const { rows } = await client.query(
        `select number, hash from ${SCHEMA}.block where chain_id = $1 order by number desc`,
        [chainId],
      );
      return rows.map((r) => ({ number: Number(r.number), hash: r.hash as string }));
    },

    commitRange({ logs, cursor, blocks, keepFrom, auctions }) {
      return transaction(async () => {
        let stored: DecodedLog[] = [];
        if (logs.length > 0) {
          // Each log once: a range indexed again (after a crash between fetch and commit) adds nothing.
          const { rows } = await client.query(
            `insert into ${SCHEMA}.log (chain_id, tx_hash, log_index, tx_index, block_number, block_hash,
               block_timestamp, address, event, args, detail)
             select $1, x.tx_hash, x.log_index, x.tx_index, x.block_number, x.block_hash, x.block_timestamp,
               x.address, x.event, x.args, x.detail
             from jsonb_to_recordset($2::jsonb) as x(tx_hash text, log_index int, tx_index int,
               block_number bigint, block_hash text, block_timestamp bigint, address text, event text,
               args jsonb, detail jsonb)
             on conflict do nothing
             returning tx_hash, log_index`,
            [chainId, JSON.stringify(logs.map(toRow))],
          );
          const inserted = new Set(rows.map((r) => `${r.tx_hash}:${r.log_index}`));
          stored = logs.filter((l) => inserted.has(`${l.txHash}:${l.logIndex}`));
        }
        const state = stateWith(auctions);
        const facts: Fact[] = [];
        for (const log of stored) facts.push(...(await factsOf(log, state)));
        await enqueueMany(client, facts, { schema: SCHEMA });
        if (blocks.length > 0) {
          await client.query(
            `insert into ${SCHEMA}.block (chain_id, number, hash)
             select $1, x.number, x.hash from jsonb_to_recordset($2::jsonb) as x(number bigint, hash text)
             on conflict (chain_id, number) do update set hash = excluded.hash`,
            [chainId, JSON.stringify(blocks.filter((b) => b.hash !== null))],
          );
        }
        await client.query(`delete from ${SCHEMA}.block where chain_id = $1 and number < $2`, [
          chainId,
          keepFrom,
        ]);
        await upsertCursor(cursor);
        return { stored: stored.length, facts: facts.length };
      });
    },

    rollback(ancestor) {
      return transaction(async () => {
        const { rows } = await client.query(
          `delete from ${SCHEMA}.log where chain_id = $1 and block_number > $2
           returning tx_hash, log_index, block_number, block_hash, block_timestamp, event`,
          [chainId, ancestor.number],
        );
        // Newest first: consumers undo in the reverse order of what they applied.
        const removed = rows
          .map((r) => ({
            chainId,
            txHash: r.tx_hash as string,
            logIndex: Number(r.log_index),
            blockNumber: Number(r.block_number),
            blockHash: r.block_hash as string,
            blockTimestamp: r.block_timestamp === null ? null : Number(r.block_timestamp),
            event: r.event as ChainEventName,
          }))
          .sort((a, b) => b.blockNumber - a.blockNumber || b.logIndex - a.logIndex);
        const retractions: Fact[] = removed.flatMap((log) =>
          FACTS_OF_EVENT[log.event].map((descriptor) => ({
            descriptor: ChainEvents.factRetracted,
            payload: { origin: originOf(log), retracted: descriptor.name },
          })),
        );
        await enqueueMany(client, retractions, { schema: SCHEMA });
        await client.query(`delete from ${SCHEMA}.block where chain_id = $1 and number > $2`, [
          chainId,
          ancestor.number,
        ]);
        await upsertCursor(ancestor);
        return { removed: removed.length, retracted: retractions.length };
      });
    },
  };
}

const toRow = (log: DecodedLog) => ({
  tx_hash: log.txHash,
  log_index: log.logIndex,
  tx_index: log.txIndex,
  block_number: log.blockNumber,
  block_hash: log.blockHash,
  block_timestamp: log.blockTimestamp,
  address: log.address,
  event: log.event,
  args: log.args,
  detail: log.detail,
});

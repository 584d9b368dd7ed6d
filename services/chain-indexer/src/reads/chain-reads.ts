import { roleOf, UserStatus } from "@fundraise/contracts";
import type { SqlExecutor } from "@fundraise/outbox";
import {
  ADDRESS_PROBLEM,
  type AuctionStatus,
  type ChainRpc,
  ErrorCode,
  errors,
  parseAddress,
  type ResponseOf,
  type UserRole,
} from "@fundraise/protocol";
import { SCHEMA } from "../indexer/index-store.ts";
import type { HotKeys } from "./hot-keys.ts";

type LogsAnswer = ResponseOf<typeof ChainRpc.evaluationLogs>;
type EventLog = LogsAnswer["logs"][number];
type AuctionAnswer = ResponseOf<typeof ChainRpc.auctionByHash>;
type EvaluationAnswer = ResponseOf<typeof ChainRpc.evaluation>;

/**
 * The chain reads of rules.md §5, answered from the index (never from the chain). Each answer says
 * how far the index had got (`indexedBlock`): the cursor is read first, so every row read after it is
 * at least that fresh.
 */
export interface ChainReads {
  evaluationLogs(): Promise<LogsAnswer>;
  registerLogs(): Promise<LogsAnswer>;
  whitelistInsertLogs(address: string): Promise<LogsAnswer>;
  whitelistRemoveLogs(address: string): Promise<LogsAnswer>;
  whitelisted(address: string): Promise<{ whitelisted: boolean; indexedBlock: number }>;
  role(address: string): Promise<{ role: UserRole; indexedBlock: number }>;
  auctionByHash(fileHash: string): Promise<AuctionAnswer>;
  evaluation(fileHash: string): Promise<EvaluationAnswer>;
  indexedBlock(): Promise<number>;
}

/** An address from a caller, EIP-55 (the platform's one rule, protocol `parseAddress`); else 400. */
export function requireAddress(input: string): string {
  const address = parseAddress(input);
  if (!address) {
    throw errors.validation(ErrorCode.VALIDATION_FAILED, `address ${ADDRESS_PROBLEM}`, {
      details: [{ field: "address", problem: ADDRESS_PROBLEM }],
    });
  }
  return address;
}

const HASH = /^(0x)?[0-9a-fA-F]{64}$/;
const HASH_PROBLEM = "must be a project hash: 64 hex digits, with or without 0x";

/** A project hash from a caller, in the chain's spelling (0x + lower-case hex); else 400. */
export function requireProjectHash(input: string): string {
  const value = input.trim();
  if (!HASH.test(value)) {
    throw errors.validation(ErrorCode.VALIDATION_FAILED, `fileHash ${HASH_PROBLEM}`, {
      details: [{ field: "fileHash", problem: HASH_PROBLEM }],
    });
  }
  return `0x${value.replace(/^0x/, "").toLowerCase()}`;
}

const STATUS_OF_EVENT: Record<string, AuctionStatus> = {
  AuctionStarted: "Running",
  AuctionPaused: "Paused",
  AuctionFinished: "Ended",
};

const LOG_COLUMNS = "address, block_hash, block_number, tx_hash, tx_index, log_index, args";

function toEventLog(row: Record<string, unknown>): EventLog {
  return {
    event: row.args as Record<string, unknown>,
    log: {
      address: row.address as string,
      blockHash: row.block_hash as string,
      blockNumber: Number(row.block_number),
      transactionHash: row.tx_hash as string,
      transactionIndex: Number(row.tx_index),
      logIndex: Number(row.log_index),
      removed: false,
    },
  };
}

/** No cache: every read from Postgres. */
const uncached: Pick<HotKeys, "read"> = { read: (_field, compute) => compute() };

export function createChainReads(
  sql: () => SqlExecutor,
  chainId: number,
  cache: Pick<HotKeys, "read"> = uncached,
): ChainReads {
  const query = async (text: string, params: unknown[]) => (await sql().query(text, params)).rows;

  const logsOf = (event: string): Promise<LogsAnswer> => cache.read(`logs:${event}`, () => readLogsOf(event));
  const readLogsOf = async (event: string): Promise<LogsAnswer> => {
    const indexed = await indexedBlock();
    const rows = await query(
      `select ${LOG_COLUMNS} from ${SCHEMA}.log where chain_id = $1 and event = $2
       order by block_number, log_index`,
      [chainId, event],
    );
    return { logs: rows.map(toEventLog), indexedBlock: indexed };
  };

  const logsOfUser = (event: string, input: string): Promise<LogsAnswer> => {
    const address = requireAddress(input);
    return cache.read(`logs:${event}:${address}`, () => readLogsOfUser(event, address));
  };
  const readLogsOfUser = async (event: string, address: string): Promise<LogsAnswer> => {
    const indexed = await indexedBlock();
    const rows = await query(
      `select ${LOG_COLUMNS} from ${SCHEMA}.log where chain_id = $1 and args->>'user' = $2 and event = $3
       order by block_number, log_index`,
      [chainId, address, event],
    );
    return { logs: rows.map(toEventLog), indexedBlock: indexed };
  };

  async function statusOf(address: string): Promise<number> {
    const rows = await query(
      `select (args->>'newStatus')::int as status from ${SCHEMA}.log
       where chain_id = $1 and args->>'user' = $2 and event = 'UserStatusChanged'
       order by block_number desc, log_index desc limit 1`,
      [chainId, address],
    );
    return Number(rows[0]?.status ?? UserStatus.Default);
  }

  async function isAdmin(address: string): Promise<boolean> {
    const rows = await query(
      `select args->>'to' = $2 as admin from ${SCHEMA}.log
       where chain_id = $1 and event = 'AdminChange' and (args->>'to' = $2 or args->>'from' = $2)
       order by block_number desc, log_index desc limit 1`,
      [chainId, address],
    );
    return rows[0]?.admin === true;
  }

  async function indexedBlock(): Promise<number> {
    const rows = await query(`select block_number from ${SCHEMA}.cursor where chain_id = $1`, [chainId]);
    return rows[0] ? Number(rows[0].block_number) : -1;
  }

  return {
    evaluationLogs: () => logsOf("ProjectEvaluation"),
    registerLogs: () => logsOf("Register"),
    whitelistInsertLogs: (address) => logsOfUser("WhitelistInsert", address),
    whitelistRemoveLogs: (address) => logsOfUser("WhitelistRemove", address),
    whitelisted(input) {
      const address = requireAddress(input);
      return cache.read(`whitelisted:${address}`, async () => {
        const indexed = await indexedBlock();
        return { whitelisted: (await statusOf(address)) === UserStatus.Whitelisted, indexedBlock: indexed };
      });
    },
    role(input) {
      const address = requireAddress(input);
      return cache.read(`role:${address}`, async () => {
        const indexed = await indexedBlock();
        const [status, admin] = await Promise.all([statusOf(address), isAdmin(address)]);
        return { role: roleOf(status, admin), indexedBlock: indexed };
      });
    },
    auctionByHash(fileHash) {
      const hash = requireProjectHash(fileHash);
      return cache.read(`auction:${hash}`, () => readAuction(hash));
    },
    evaluation(fileHash) {
      const hash = requireProjectHash(fileHash);
      return cache.read(`evaluation:${hash}`, () => readEvaluation(hash));
    },
    indexedBlock,
  };

  async function readAuction(hash: string): Promise<AuctionAnswer> {
    // The cursor first: every row read after it is at least that fresh.
    const indexed = await indexedBlock();
    const [created] = await query(
      `select args, detail from ${SCHEMA}.log
       where chain_id = $1 and event = 'CreateAuctionEvent' and args->>'fileHash' = $2
       order by block_number desc, log_index desc limit 1`,
      [chainId, hash],
    );
    const [registered] = await query(
      `select args->>'from' as proposer from ${SCHEMA}.log
       where chain_id = $1 and event = 'Register' and args->>'projectHash' = $2
       order by block_number desc, log_index desc limit 1`,
      [chainId, hash],
    );
    const args = (created?.args ?? null) as Record<string, string> | null;
    const detail = (created?.detail ?? null) as Record<string, string> | null;
    let status: AuctionStatus | null = null;
    if (args) {
      const [last] = await query(
        `select event from ${SCHEMA}.log
         where chain_id = $1 and address = $2 and event in ('AuctionStarted', 'AuctionPaused', 'AuctionFinished')
         order by block_number desc, log_index desc limit 1`,
        [chainId, args.auction],
      );
      status = last ? (STATUS_OF_EVENT[last.event as string] ?? "Off") : "Off";
    }
    return {
      project: {
        proposerAddress: detail?.proposer ?? (registered?.proposer as string | undefined) ?? null,
        tokenAddress: detail?.token ?? null,
        auctionAddress: args?.auction ?? null,
        auctionType: args?.auctionType ?? null,
      },
      isAuctionCreated: args !== null,
      isAuctionStarted: status !== null && status !== "Off",
      auctionStatus: status,
      indexedBlock: indexed,
    };
  }

  async function readEvaluation(hash: string): Promise<EvaluationAnswer> {
    const indexed = await indexedBlock();
    // The first evaluation of the current registration: a removal voids the evaluations before it.
    const [first] = await query(
      `select (e.args->>'isApproved')::boolean as approved from ${SCHEMA}.log e
       where e.chain_id = $1 and e.event = 'ProjectEvaluation' and e.args->>'projectHash' = $2
         and not exists (
           select 1 from ${SCHEMA}.log r
           where r.chain_id = e.chain_id and r.event = 'ProjectRemoved' and r.args->>'projectHash' = e.args->>'projectHash'
             and (r.block_number, r.log_index) > (e.block_number, e.log_index))
       order by e.block_number, e.log_index limit 1`,
      [chainId, hash],
    );
    return { isApproved: first ? (first.approved as boolean) : null, indexedBlock: indexed };
  }
}

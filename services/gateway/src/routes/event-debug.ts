import type { Bus } from "@fundraise/bus";
import { ChainRpc, EventLog } from "@fundraise/protocol";
import Type from "typebox";
import type { Server } from "../server.ts";
import { registerRpcRoute } from "./define.ts";
import { AddressParams, addressParam, NoInput } from "./params.ts";

const tag = "EventDebug";

/**
 * How far the index had got when it answered (every chain read says it): a client that sent a
 * transaction reads until this reaches the transaction's block. A header, since the answers' `data`
 * keeps rules.md §5.2's shapes.
 */
export const INDEXED_BLOCK_HEADER = "x-indexed-block";
const indexedBlock = (result: { indexedBlock: number }) => ({
  [INDEXED_BLOCK_HEADER]: String(result.indexedBlock),
});
const logsOnly = {
  answer: {
    schema: Type.Array(EventLog),
    data: (result: { logs: unknown[] }) => result.logs,
    headers: indexedBlock,
  },
};

/** Chain data is public: every event-debug route is anonymous and served from the index. */
export function registerEventDebugRoutes(app: Server, bus: Bus): void {
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/EventDebug/Debug",
    tag,
    summary: "ProjectEvaluation logs",
    access: "anonymous",
    input: { querystring: NoInput },
    rpc: ChainRpc.evaluationLogs,
    request: () => ({}),
    ...logsOnly,
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/EventDebug/DebugAdd/:address",
    tag,
    summary: "WhitelistInsert logs of an address",
    access: "anonymous",
    input: { params: AddressParams },
    rpc: ChainRpc.whitelistInsertLogs,
    request: ({ params }) => ({ address: addressParam(params.address) }),
    ...logsOnly,
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/EventDebug/DebugRemove/:address",
    tag,
    summary: "WhitelistRemove logs of an address",
    access: "anonymous",
    input: { params: AddressParams },
    rpc: ChainRpc.whitelistRemoveLogs,
    request: ({ params }) => ({ address: addressParam(params.address) }),
    ...logsOnly,
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/EventDebug/Whitelisted/:address",
    tag,
    summary: "Whether an address is whitelisted on chain",
    access: "anonymous",
    input: { params: AddressParams },
    rpc: ChainRpc.whitelisted,
    request: ({ params }) => ({ address: addressParam(params.address) }),
    answer: {
      schema: Type.Boolean(),
      data: (result) => result.whitelisted,
      headers: indexedBlock,
    },
  });
}

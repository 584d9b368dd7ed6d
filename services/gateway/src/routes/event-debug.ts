import type { Bus } from "@fundraise/bus";
import { ChainRpc } from "@fundraise/protocol";
import type { Server } from "../server.ts";
import { registerRpcRoute } from "./define.ts";
import { AddressParams, addressParam, NoInput } from "./params.ts";

const tag = "EventDebug";

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
  });
}

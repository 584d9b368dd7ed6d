/** The platform's contracts: generated ABIs and bytecode, event specs, deployment record and deploy function. */
export {
  AUCTION_STATUS_NAMES,
  AUCTION_TYPES,
  AuctionStatus,
  type AuctionStatusName,
  type AuctionType,
  auctionAbiByType,
  auctionStatusName,
  isAuctionType,
} from "./auction-types.ts";
export {
  type BlockHeader,
  type ChainClient,
  ChainRpcError,
  checkChainId,
  createChainClient,
  type JsonRpcCall,
  type LogFilter,
  type RawLog,
} from "./chain-client.ts";
// The typed contracts and their `…At` constructors: all of contracts.ts.
export * from "./contracts.ts";
export {
  anvilDemoSetup,
  confirm,
  type DemoSetup,
  type DeployOptions,
  deployPlatform,
  setupDemo,
} from "./deploy.ts";
export { type Deployment, loadDeployment, parseDeployment, writeDeployment } from "./deployment.ts";
export {
  AUCTION_EVENTS,
  AUCTION_PROGRESS_EVENT,
  type ChainEventName,
  type ChainEventSource,
  type ChainEventSpec,
  chainEvents,
  eventByTopic,
  eventNameByTopic,
  FACTORY_EVENTS,
  REGISTRY_EVENTS,
  topicsOf,
} from "./events.ts";
export * from "./generated/index.ts";
export { type HeadsLog, type NewHeads, webSocketUrlOf } from "./new-heads.ts";
export { createProvider, fetchChainId, waitForReceipt } from "./provider.ts";
export { ADMIN_ROLE, type ChainRole, roleOf, UserStatus, type UserStatusName } from "./roles.ts";

export {
  claimMessage,
  type MessageKey,
  PROCESSED_MESSAGE_DDL,
  type ProcessOnceResult,
  processedMessageDdl,
  processOnce,
  pruneProcessedMessages,
} from "./idempotency.ts";
export {
  type EnqueueOptions,
  enqueue,
  enqueueMany,
  OUTBOX_DDL,
  type OutboxItem,
  outboxChannelOf,
  outboxDdl,
  outboxTraceDefaultDdl,
  TRACEPARENT_SETTING,
  withTraceparent,
} from "./outbox.ts";
export { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
export {
  createRpcAnswers,
  type RpcAnswersOptions,
  rpcAnswerClaimDdl,
  rpcAnswerClaimUndoDdl,
  rpcAnswerDdl,
} from "./rpc-answers.ts";
export type { SqlClient, SqlExecutor, SqlPool } from "./sql.ts";

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
  CAUSED_BY_SETTING,
  type EnqueueOptions,
  enqueue,
  enqueueMany,
  OUTBOX_DDL,
  type OutboxItem,
  outboxChannelOf,
  outboxDdl,
  outboxTraceDefaultDdl,
  REQUEST_ID_SETTING,
  type RowHeaders,
  TRACEPARENT_SETTING,
  withTraceparent,
  withWriteContext,
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

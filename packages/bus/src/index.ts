export {
  type AmqpBus,
  type AmqpBusOptions,
  createAmqpBus,
  failureHeaders,
  persistentCopyOf,
  type QueueReport,
} from "./amqp-bus.ts";
export type * from "./bus.ts";
export { WithMessage, withMessage } from "./bus.ts";
export {
  CBOR_CONTENT_TYPE,
  decodeBody,
  type EncodedBody,
  encodeBody,
  JSON_CONTENT_TYPE,
} from "./codec.ts";
export { type ConnectionState, redactUrl } from "./connection.ts";
export {
  amqpTimestamp,
  carriedHeaders,
  compactHeaders,
  errorReply,
  Header,
  type Headers,
  isMessageKind,
  MESSAGE_KINDS,
  type MessageKind,
  numberHeader,
  readReply,
  stringHeader,
  successReply,
} from "./headers.ts";
export { REQUEST_ID_PATTERN, timedTraceId, timeOfId, uuidv7 } from "./ids.ts";
export {
  type BusJournal,
  DELIVERY_OUTCOMES,
  type DeliveryOutcome,
  deliveryId,
  isJournalKind,
  JOURNAL_KINDS,
  type JournalFactory,
  type JournalHost,
  type JournalKind,
  type JournalNote,
} from "./journal-hook.ts";
export { type BusMetrics, outcomeOf, type QueueStat } from "./metrics.ts";
export {
  backoffWithJitter,
  DEFAULT_RETRY_POLICY,
  decideFailure,
  type FailureDecision,
  isRetryableFailure,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelay,
  retryDelays,
} from "./retry.ts";
export type { KeptAnswer, KeyClaim, RequestKey, RpcAnswers } from "./rpc-answers.ts";
export {
  deadLetterQueueOf,
  Exchanges,
  type QueueType,
  retryQueueOf,
  rpcQueueOf,
  SUBSCRIPTIONS_STREAM,
  type SubscriptionRecord,
  subscriptionQueueOf,
} from "./topology.ts";
export {
  activeTraceparent,
  type BusSpan,
  formatTraceparent,
  parseTraceparent,
  processSpan,
  publishSpan,
  rpcClientSpan,
  rpcServerSpan,
} from "./trace-context.ts";
export {
  createWaitingLog,
  outageReason,
  type WaitingLog,
  type WaitingLogOptions,
} from "./waiting.ts";

export {
  type Call,
  type ClientOptions,
  createClient,
  type DataOf,
  type FundraiseClient,
  type paths,
  type RawClient,
} from "./client.ts";
export { ApiError } from "./errors.ts";
export type {
  ChainMessage,
  Invitation,
  InvitationMessage,
  ProjectChange,
  ProjectDTO,
  ProjectMessage,
  ResetMessage,
  RoleMessage,
  StreamMessages,
  StreamMessageType,
  UserDTO,
  UserRole,
} from "./messages.ts";
export type { RetryOptions } from "./retry.ts";
export type {
  MessageHandlers,
  MessageMeta,
  ReconnectInfo,
  SubscribeHandlers,
  SubscribeOptions,
  Subscription,
} from "./subscribe.ts";

export { silentLogger } from "../logger.ts";
export {
  expectAppError,
  outboxPayloads,
  type ReceivedEvent,
  receivedEvent,
  serviceEvents,
} from "./assertions.ts";
export { createTestDatabase, type TestDatabase } from "./database.ts";
export { harnessOfFile } from "./file-harness.ts";
export {
  createMemoryStore,
  type Emitted,
  type MemoryStore,
  type MemoryTx,
  withCommitted,
} from "./memory-store.ts";
export { uniqueIndexesOf } from "./migrations.ts";
export { type HarnessService, type ServiceHarness, startServiceHarness } from "./service-harness.ts";

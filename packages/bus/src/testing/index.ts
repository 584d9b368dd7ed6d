export { createInMemoryBus } from "./in-memory-bus.ts";
export { createTestVhost, type TestVhost, waitFor } from "./vhost.ts";

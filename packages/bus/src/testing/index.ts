export { type BrokerNode, startBrokerNode } from "./broker-node.ts";
export { createInMemoryBus } from "./in-memory-bus.ts";
export { createMemoryAnswers } from "./memory-answers.ts";
export { testMessageContext } from "./message-context.ts";
export { createTcpGate, type TcpGate } from "./tcp-gate.ts";
export { createTestVhost, type TestVhost, waitFor } from "./vhost.ts";

import { defineRpc } from "@fundraise/protocol";
import Type from "typebox";

/** The one RPC of run-service-fixture.ts: a handler that takes `ms`. */
export const SlowRpc = defineRpc("users.fixture.slow", {
  request: Type.Object({ ms: Type.Integer() }),
  response: Type.Literal("done"),
});

import { defineRpc } from "@fundraise/protocol";
import Type from "typebox";

/** The one RPC of run-service-fixture.ts: a handler that takes `ms`. */
export const SlowRpc = defineRpc("users.fixture.slow", {
  request: Type.Object({ ms: Type.Integer() }),
  response: Type.Literal("done"),
});

/** A handler whose statement goes to a database that is not there (nothing listens on its port). */
export const UnreachableDatabaseRpc = defineRpc("users.fixture.unreachable-database", {
  request: Type.Object({}),
  response: Type.Null(),
});

/** A handler that fails as Postgres does when it has no connection left (SQLSTATE 53300), outside any transaction. */
export const ExhaustedDatabaseRpc = defineRpc("users.fixture.exhausted-database", {
  request: Type.Object({}),
  response: Type.Null(),
});

import { describe, expect, it } from "vitest";
import { OUTBOX_DDL, outboxDdl, PROCESSED_MESSAGE_DDL, processedMessageDdl } from "../src/index.ts";

describe("migration DDL", () => {
  it("targets the given schema, public by default", () => {
    expect(OUTBOX_DDL).toContain("CREATE TABLE IF NOT EXISTS public.outbox");
    expect(outboxDdl("projects")).toContain("projects.outbox");
    expect(PROCESSED_MESSAGE_DDL).toContain("PRIMARY KEY (consumer, message_key)");
    expect(processedMessageDdl("users")).toContain("users.processed_message");
  });

  it("refuses schema names that are not plain identifiers", () => {
    expect(() => outboxDdl("x; DROP TABLE y")).toThrow(/Invalid schema/);
    expect(() => processedMessageDdl("Upper")).toThrow(/Invalid schema/);
  });
});

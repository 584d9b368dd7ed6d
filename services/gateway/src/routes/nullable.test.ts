import { AuctionStatus, Nullable, ProjectDto, ServiceResponse } from "@fundraise/protocol";
import { build } from "fast-json-stringify";
import Type from "typebox";
import { describe, expect, it } from "vitest";
import { openApiNullables } from "./nullable.ts";

describe("openApiNullables (response schemas for fast-json-stringify and OpenAPI 3.0)", () => {
  it("a nullable scalar keeps its type and format and says nullable", () => {
    const schema = openApiNullables(
      JSON.parse(JSON.stringify(Nullable(Type.String({ format: "date-time", description: "d" })))),
    );
    expect(schema).toEqual({ type: "string", format: "date-time", description: "d", nullable: true });
  });

  it("the envelope's data (object or array or null) is a nullable schema, not a union", () => {
    const envelope = openApiNullables(JSON.parse(JSON.stringify(ServiceResponse(Type.Array(Type.String())))));
    expect(envelope.properties.data).toEqual({ type: "array", items: { type: "string" }, nullable: true });
    expect(envelope.properties.message).toEqual({ type: "string", nullable: true });
  });

  it("a nullable union of constants becomes a nullable enum; other unions are left as they are", () => {
    expect(openApiNullables(JSON.parse(JSON.stringify(Nullable(AuctionStatus))))).toMatchObject({
      type: "string",
      enum: ["Off", "Running", "Paused", "Ended", null],
      nullable: true,
    });
    const mixed = { anyOf: [{ type: "string" }, { type: "object", properties: {} }] };
    expect(openApiNullables(mixed)).toEqual(mixed);
  });

  it("serializes ProjectDTOs in the envelope exactly as the original schema does", () => {
    // The envelope's `data` is a union: fast-json-stringify asks Ajv which branch a value matches.
    const original = JSON.parse(JSON.stringify(ServiceResponse(Type.Array(ProjectDto))));
    const dto = {
      projectID: 1,
      projectName: "Solar",
      projectDescription: null,
      markDown: "",
      fileHash: "AB".repeat(32),
      status: "Approved",
      date: "2026-11-22T10:00:00.000Z",
      rating: 4.5,
      viewerAccepted: true,
      isAuctionCreated: false,
      isAuctionStarted: false,
      auctionStatus: null,
      imageUrl: null,
      proposerAddress: "0x1111111111111111111111111111111111111111",
      viewerAcceptedAddress: null,
    };
    const values = [
      [dto],
      [{ ...dto, projectDescription: "d", auctionStatus: "Running", imageUrl: "/ipfs/x", date: null }],
    ];
    for (const data of [...values, null, []]) {
      const value = { data, success: true, message: null };
      expect(build(openApiNullables(original))(value)).toBe(build(original)(value));
    }
  });
});

import { describe, expect, it } from "vitest";
import * as protocol from "./index.ts";
import {
  AppError,
  ERROR_KINDS,
  ErrorCode,
  errors,
  HTTP_STATUS_OF_KIND,
  isAppError,
  ProjectsRpc,
  toAppError,
  UserDto,
  UsersRpc,
  validatorOf,
} from "./index.ts";

describe("errors", () => {
  it("gives every kind its HTTP status, retrying only dependency failures", () => {
    expect(ERROR_KINDS.map((k) => HTTP_STATUS_OF_KIND[k])).toEqual([
      400, 401, 403, 404, 409, 410, 413, 422, 429, 503, 504, 500,
    ]);
    expect(errors.unavailable(ErrorCode.DB_UNAVAILABLE, "down").retryable).toBe(true);
    expect(errors.timeout(ErrorCode.RPC_TIMEOUT, "slow").retryable).toBe(true);
    expect(errors.conflict(ErrorCode.PROJECT_NAME_TAKEN, "taken").retryable).toBe(false);
  });

  it("recognises an AppError by its brand, also across copies, and masks anything else", () => {
    const copy = Object.assign(Object.create(null), { [Symbol.for("fundraise.AppError")]: true });
    expect(isAppError(copy)).toBe(true);
    expect(isAppError(new Error("x"))).toBe(false);
    const masked = toAppError(new TypeError("secret detail"));
    expect(masked).toBeInstanceOf(AppError);
    expect(masked.kind).toBe("internal");
    expect(masked.message).not.toContain("secret detail");
    expect(masked.cause).toBeInstanceOf(TypeError);
  });
});

describe("descriptors", () => {
  it("name the owning service, whose queue answers them", () => {
    expect(UsersRpc.count.service).toBe("users");
    expect(ProjectsRpc.invite.service).toBe("projects");
    expect(ProjectsRpc.add.timeoutMs).toBeGreaterThan(5000);
  });

  it("validate requests, listing every issue", () => {
    const v = validatorOf(ProjectsRpc.rate.request);
    const caller = {
      userId: 1,
      username: "ada",
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      role: "Base",
    };
    expect(v.check({ caller, id: 1, rating: 4.5 })).toBe(true);
    expect(() => v.assert({ caller: { ...caller, role: "King" }, id: "1" })).toThrowError(
      expect.objectContaining({ kind: "validation", code: "VALIDATION_FAILED" }),
    );
    expect(v.issues({ caller, id: "1" }).map((i) => i.path)).toEqual(expect.arrayContaining(["/id"]));
  });

  it("carry content by reference: a project write names the directory the gateway added", () => {
    const v = validatorOf(ProjectsRpc.add.request);
    const caller = {
      userId: 1,
      username: "ada",
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      role: "Base",
    };
    const project = { projectName: "P", projectDescription: null, markDown: null };
    const cid = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o";
    const content = { cid, fileBytes: 12, imageBytes: null };
    expect(v.check({ caller, project: { ...project, content } })).toBe(true);
    expect(v.check({ caller, project: { ...project, content: null } })).toBe(true);
    expect(v.check({ caller, project: { ...project, content: { ...content, cid: "0102" } } })).toBe(false);
    expect(v.check({ caller, project: { ...project, content: { ...content, fileBytes: 0 } } })).toBe(false);
    expect(v.check({ caller, project: { ...project, file: new Uint8Array([1, 2]) } })).toBe(false);
  });

  it("never carry file content: no message schema holds bytes or hex of a file", () => {
    const descriptors: { name: string; schemas: unknown[] }[] = [];
    const collect = (value: unknown, depth = 0) => {
      if (value === null || typeof value !== "object" || depth > 2) return;
      const v = value as {
        type?: unknown;
        name?: string;
        request?: unknown;
        response?: unknown;
        payload?: unknown;
      };
      if (v.type === "rpc") descriptors.push({ name: v.name as string, schemas: [v.request, v.response] });
      else if (v.type === "event") descriptors.push({ name: v.name as string, schemas: [v.payload] });
      else for (const item of Object.values(value)) collect(item, depth + 1);
    };
    collect(protocol);
    expect(descriptors.length).toBeGreaterThan(40);
    // The DTO's optional fileHex is filled in by the gateway from IPFS: no list asks for it over the bus.
    const text = (schema: unknown) => JSON.stringify(schema) ?? "";
    for (const { name, schemas } of descriptors) {
      for (const schema of schemas) expect(text(schema), name).not.toMatch(/"bytes"|"withHex"/);
    }
  });

  it("write records with the wire names of the existing client", () => {
    expect(Object.keys(UserDto.properties)).toEqual([
      "id",
      "name",
      "surname",
      "address",
      "mailAddress",
      "username",
      "role",
      "invitations",
    ]);
    expect(Object.keys(ProjectsRpc.get.response.properties)).toEqual(
      expect.arrayContaining([
        "projectID",
        "projectName",
        "markDown",
        "fileHash",
        "isAuctionCreated",
        "viewerAcceptedAddress",
      ]),
    );
  });
});

import { describe, expect, it } from "vitest";
import * as protocol from "./index.ts";
import {
  AppError,
  Bytes,
  ERROR_KINDS,
  ErrorCode,
  errors,
  HTTP_STATUS_OF_KIND,
  isAppError,
  ProjectsRpc,
  StorageUpload,
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

  it("carry bytes as bytes: an upload's parts; a project write names the upload", () => {
    const part = validatorOf(StorageUpload.part.request);
    const bytes = { streamId: "ab".repeat(16), seq: 0, entry: "whitepaper" };
    expect(part.check({ ...bytes, bytes: new Uint8Array([1, 2]) })).toBe(true);
    expect(part.check({ ...bytes, bytes: "0102" })).toBe(false);
    const v = validatorOf(ProjectsRpc.add.request);
    const caller = {
      userId: 1,
      username: "ada",
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      role: "Base",
    };
    const project = { projectName: "P", projectDescription: null, markDown: null };
    const stream = { streamId: "ab".repeat(16), instance: "cd".repeat(8), parts: 1 };
    expect(v.check({ caller, project: { ...project, content: { stream, file: true, image: false } } })).toBe(
      true,
    );
    expect(v.check({ caller, project: { ...project, content: null } })).toBe(true);
    expect(v.check({ caller, project: { ...project, file: new Uint8Array([1, 2]) } })).toBe(false);
  });

  it("never journal a byte string whole: every call that carries bytes is journaled without them", () => {
    const carriesBytes = (schema: unknown, depth = 0): boolean => {
      if (schema === Bytes) return true;
      if (schema === null || typeof schema !== "object" || depth > 20) return false;
      return Object.values(schema).some((v) => carriesBytes(v, depth + 1));
    };
    const descriptors: protocol.RpcDescriptor[] = [];
    const collect = (value: unknown, depth = 0) => {
      if (value === null || typeof value !== "object" || depth > 2) return;
      if ((value as { type?: unknown }).type === "rpc") descriptors.push(value as protocol.RpcDescriptor);
      else for (const v of Object.values(value)) collect(v, depth + 1);
    };
    collect(protocol);
    const withBytes = descriptors.filter((d) => carriesBytes(d.request) || carriesBytes(d.response));
    expect(withBytes.map((d) => d.name).sort()).toEqual(
      expect.arrayContaining(["storage.content.read", "storage.upload.part"]),
    );
    for (const d of withBytes) expect(d.journal, d.name).not.toBe(true);
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

import {
  AuthRpc,
  ChainRpc,
  errors,
  ProjectsRpc,
  type RpcDescriptor,
  StorageRpc,
  UsersRpc,
} from "@fundraise/protocol";
import type { RouteEntry } from "../plugins/route-table.ts";
import { createHarness, type Harness } from "./harness.ts";

/**
 * Test cases derived from the gateway's own route table: sample values that pass a route's schemas,
 * and a bus that records every RPC request a route sends. A route added later is covered by the
 * tests built on these without anyone listing it.
 */

export type JsonSchema = {
  type?: unknown;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
};

export const ADDRESS = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
export const CAPTURED = "captured by the test bus";

/** The first branch of a union that is not `null`. */
function concrete(schema: JsonSchema): JsonSchema {
  const branches = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].filter((b) => b.type !== "null");
  return branches[0] ? concrete(branches[0]) : schema;
}

/** A JSON value the schema accepts, distinct per `seed` for strings and integers; undefined if none. */
export function sampleValue(schema: JsonSchema, seed: number): unknown {
  const s = concrete(schema);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  switch ([s.type].flat()[0]) {
    case "integer":
      return Math.min(Math.max(100 + seed, s.minimum ?? 100 + seed), s.maximum ?? 100 + seed);
    case "number":
      return Math.min(1.5, s.maximum ?? 1.5);
    case "boolean":
      return true;
    case "string":
      if (s.pattern && !new RegExp(s.pattern).test("abcd00")) {
        if (new RegExp(s.pattern).test(ADDRESS)) return ADDRESS;
        return undefined;
      }
      // Valid hex too, for the fields the gateway decodes from hex (fileHex, imageUrl).
      return (0xabcd00 + seed).toString(16);
    default:
      return undefined;
  }
}

/** The object properties a body schema allows, through intersections and unions. */
export function propertiesOf(schema: JsonSchema | undefined): Record<string, JsonSchema> {
  if (!schema) return {};
  const out: Record<string, JsonSchema> = { ...schema.properties };
  for (const branch of [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    for (const [name, property] of Object.entries(propertiesOf(branch))) out[name] ??= property;
  }
  return out;
}

/** A body with every property of the route's body schema set to a distinct valid value. */
export function sampleBody(schema: JsonSchema | undefined): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(propertiesOf(schema))
      .map(([name, property], i) => [name, sampleValue(property, i)] as const)
      .filter(([, value]) => value !== undefined),
  );
}

/** A raw path or query value the property accepts. */
export function sampleParam(schema: JsonSchema): string {
  const value = sampleValue(schema, 5);
  return typeof value === "number" ? String(Math.round(value)) : String(value ?? "x");
}

/** The route's URL with every `:param` replaced: `values` first, samples from the schema otherwise. */
export function fillUrl(route: RouteEntry, values: Record<string, string> = {}): string {
  const params = (route.schema?.params as JsonSchema | undefined)?.properties ?? {};
  return route.url.replace(/:(\w+)/g, (_m, name: string) =>
    name in values ? (values[name] as string) : sampleParam(params[name] ?? {}),
  );
}

/** The route's required query string, from samples, with `values` added. */
export function fillQuery(route: RouteEntry, values: Record<string, string> = {}): string {
  const schema = route.schema?.querystring as JsonSchema | undefined;
  const entries: [string, string][] = (schema?.required ?? [])
    .filter((name) => !(name in values))
    .map((name) => [name, sampleParam(schema?.properties?.[name] ?? {})]);
  const all = [...entries, ...Object.entries(values)];
  return all.length === 0 ? "" : `?${all.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join("&")}`;
}

/** Whether `value` occurs anywhere in `haystack` (bytes compare as their hex). */
export function containsValue(haystack: unknown, value: unknown): boolean {
  if (haystack instanceof Uint8Array) return Buffer.from(haystack).toString("hex") === value;
  if (Object.is(haystack, value)) return true;
  if (haystack === null || typeof haystack !== "object") return false;
  return Object.values(haystack).some((v) => containsValue(v, value));
}

export interface CapturedCall {
  name: string;
  request: unknown;
}

/**
 * Serves every RPC of the platform on the harness's bus (except what the harness itself serves, the
 * JWKS and session state) with a handler that records the request and answers 409, so every route's
 * request reaches the bus and stops there.
 */
export async function captureAllRpcs(h: Harness): Promise<CapturedCall[]> {
  const calls: CapturedCall[] = [];
  const groups: Record<string, Record<string, RpcDescriptor>> = {
    AuthRpc,
    UsersRpc,
    ProjectsRpc,
    ChainRpc,
    StorageRpc,
  };
  const servedByHarness = new Set(["AuthRpc.jwks", "AuthRpc.rebuildSession", "ProjectsRpc.listTag"]);
  // A refused upload's clean-up, not the route's request: its content is answered held (left pinned).
  await h.bus.serve(ProjectsRpc.releaseContent, async ({ fileHashes }) => ({
    released: [],
    held: fileHashes,
  }));
  await h.bus.serve(ProjectsRpc.confirmRelease, async () => null);
  servedByHarness.add("ProjectsRpc.releaseContent").add("ProjectsRpc.confirmRelease");
  for (const [group, descriptors] of Object.entries(groups)) {
    for (const [key, descriptor] of Object.entries(descriptors)) {
      if (servedByHarness.has(`${group}.${key}`)) continue;
      await h.bus.serve(descriptor, async (request: unknown) => {
        calls.push({ name: descriptor.name, request });
        throw errors.conflict("TEST_CAPTURED", CAPTURED);
      });
    }
  }
  return calls;
}

/** A token that every route admits: Admin is in every role list. */
export async function adminToken(h: Harness): Promise<string> {
  return h.signer.sign({ userId: 9, role: "Admin", username: "root" });
}

/** The route-table suites' gateway: no rate limits, every RPC captured (`captureAllRpcs`), an admin's token. */
export interface CapturingGateway {
  h: Harness;
  calls: CapturedCall[];
  token: string;
  stop(): Promise<void>;
}

export async function startCapturingGateway(): Promise<CapturingGateway> {
  const h = await createHarness({ RATE_LIMIT_PER_MINUTE: "1000000", AUTH_RATE_LIMIT_PER_MINUTE: "1000000" });
  return { h, calls: await captureAllRpcs(h), token: await adminToken(h), stop: () => h.close() };
}

export function authHeaders(route: RouteEntry, token: string): Record<string, string> {
  return route.access === "anonymous" ? {} : { authorization: `Bearer ${token}` };
}

/** A ProjectDTO as the projects service answers it (Approved, viewer-accepted), for list stand-ins. */
export function projectDto(id: number, fields: { projectName?: string; fileHash?: string } = {}) {
  return {
    projectID: id,
    projectName: fields.projectName ?? `P${id}`,
    date: new Date(0).toISOString(),
    isAuctionCreated: false,
    isAuctionStarted: false,
    auctionStatus: null,
    projectDescription: null,
    imageUrl: null,
    rating: 0,
    status: "Approved" as const,
    markDown: "",
    fileHash: fields.fileHash ?? "AB".repeat(32),
    proposerAddress: null,
    viewerAccepted: true,
    viewerAcceptedAddress: null,
  };
}

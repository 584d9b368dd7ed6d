import type { Server } from "../server.ts";
import { preValidationWhere } from "./route-hooks.ts";

type JsonSchema = {
  type?: unknown;
  properties?: Record<string, JsonSchema>;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
};

interface ObjectShape {
  /** Lower-cased name → the schema's spelling. */
  names: Map<string, string>;
  /** The schema of each property, by the schema's spelling. */
  properties: Map<string, JsonSchema>;
}

const shapes = new WeakMap<object, ObjectShape | null>();

/**
 * The properties an object may have under a schema: its own and those of every `allOf`, `anyOf` and
 * `oneOf` branch (an intersection or a union of objects), the first spelling of a name winning.
 */
export function objectShapeOf(schema: JsonSchema): ObjectShape | undefined {
  const cached = shapes.get(schema);
  if (cached !== undefined) return cached ?? undefined;
  const shape: ObjectShape = { names: new Map(), properties: new Map() };
  const collect = (s: JsonSchema) => {
    for (const [name, property] of Object.entries(s.properties ?? {})) {
      if (shape.names.has(name.toLowerCase())) continue;
      shape.names.set(name.toLowerCase(), name);
      shape.properties.set(name, property);
    }
    for (const branch of [...(s.allOf ?? []), ...(s.anyOf ?? []), ...(s.oneOf ?? [])]) collect(branch);
  };
  collect(schema);
  const found = shape.names.size > 0 ? shape : null;
  shapes.set(schema, found);
  return found ?? undefined;
}

/** The schema of an array's items, through the branches of a union. */
export function itemsOf(schema: JsonSchema): JsonSchema | undefined {
  if (schema.items) return schema.items;
  for (const branch of [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    const items = itemsOf(branch);
    if (items) return items;
  }
  return undefined;
}

/**
 * Renames body keys to the schema's spelling, case-insensitively (`ProjectName`, `projectname` →
 * `projectName`), as the existing web client sends all three. Unknown keys stay and are ignored.
 */
export function canonicalizeKeys(value: unknown, schema: JsonSchema | undefined): unknown {
  if (!schema || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items = itemsOf(schema);
    return items ? value.map((v) => canonicalizeKeys(v, items)) : value;
  }
  const shape = objectShapeOf(schema);
  if (!shape) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const canonical = shape.names.get(key.toLowerCase()) ?? key;
    // An exact spelling wins over a differently-cased duplicate.
    if (Object.hasOwn(out, canonical) && key !== canonical) continue;
    out[canonical] = canonicalizeKeys(v, shape.properties.get(canonical));
  }
  return out;
}

/** Body keys in the schema's spelling, on the routes that take a body (route-hooks.ts). */
export function registerWireFormat(app: Server): void {
  preValidationWhere(
    app,
    (route) => route.schema?.body !== undefined,
    (request, _reply, done) => {
      const schema = request.routeOptions.schema?.body as JsonSchema | undefined;
      if (schema && request.body !== undefined) request.body = canonicalizeKeys(request.body, schema);
      done();
    },
  );
}

import type { FastifyInstance } from "fastify";

type JsonSchema = {
  type?: unknown;
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
};

const canonicalNames = new WeakMap<object, Map<string, string>>();

function namesOf(schema: JsonSchema): Map<string, string> | undefined {
  if (!schema.properties) return undefined;
  let names = canonicalNames.get(schema);
  if (!names) {
    names = new Map(Object.keys(schema.properties).map((k) => [k.toLowerCase(), k]));
    canonicalNames.set(schema, names);
  }
  return names;
}

/**
 * Renames body keys to the schema's spelling, case-insensitively (`ProjectName`, `projectname` →
 * `projectName`), as the existing web client sends all three. Unknown keys stay and are ignored.
 */
export function canonicalizeKeys(value: unknown, schema: JsonSchema | undefined): unknown {
  if (!schema || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return schema.items ? value.map((v) => canonicalizeKeys(v, schema.items)) : value;
  const objectSchema = schema.properties ? schema : schema.anyOf?.find((s) => s.properties);
  if (!objectSchema) return value;
  const names = namesOf(objectSchema);
  if (!names) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const canonical = names.get(key.toLowerCase()) ?? key;
    // An exact spelling wins over a differently-cased duplicate.
    if (canonical in out && key !== canonical) continue;
    out[canonical] = canonicalizeKeys(v, objectSchema.properties?.[canonical]);
  }
  return out;
}

export function registerWireFormat(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => {
    const schema = request.routeOptions.schema?.body as JsonSchema | undefined;
    if (schema && request.body !== undefined) request.body = canonicalizeKeys(request.body, schema);
  });
}

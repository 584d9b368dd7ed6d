/**
 * Reading JSON schemas as TypeBox 1.x writes them, for the redaction of personal values: which schema a
 * `$ref` names, and whether a value has the shape of a union's branch.
 */

export type Schema = Record<string, unknown>;

export const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The `$ref`s of a root schema: the `$id` of any schema inside it (TypeBox's `Cyclic` names its `$defs` so),
 * and `#/...` JSON pointers into it. Unknown references resolve to nothing.
 */
export function resolverOf(root: Schema): (ref: string) => Schema | undefined {
  const ids = new Map<string, Schema>();
  collectIds(root, ids, new Set());
  return (ref) => ids.get(ref) ?? (ref.startsWith("#") ? pointerTarget(root, ref.slice(1)) : undefined);
}

function collectIds(value: unknown, ids: Map<string, Schema>, seen: Set<unknown>): void {
  if (typeof value !== "object" || value === null || seen.has(value)) return;
  seen.add(value);
  if (isSchema(value) && typeof value.$id === "string" && !ids.has(value.$id)) ids.set(value.$id, value);
  for (const child of Object.values(value)) collectIds(child, ids, seen);
}

function pointerTarget(root: Schema, pointer: string): Schema | undefined {
  let at: unknown = root;
  for (const token of pointer.split("/").slice(1)) {
    if (!isSchema(at) && !Array.isArray(at)) return undefined;
    at = (at as Schema)[token.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return isSchema(at) ? at : undefined;
}

/**
 * Whether a value has a branch's shape: `strict` also asks for the required fields and the fields' constants
 * (the discriminators of a union of objects); `loose` only for the JSON type.
 */
export interface Fit {
  strict: (value: unknown) => boolean;
  loose: (value: unknown) => boolean;
}

const ANY: Fit = { strict: () => true, loose: () => true };

/** The shape test of a branch, computed once from it. */
export function fitOf(schema: unknown, resolve: (ref: string) => Schema | undefined, depth = 0): Fit {
  if (!isSchema(schema) || depth > 8) return ANY;
  if (typeof schema.$ref === "string") return fitOf(resolve(schema.$ref), resolve, depth + 1);
  const nested = [...list(schema.anyOf), ...list(schema.oneOf)].map((b) => fitOf(b, resolve, depth + 1));
  const types = typesOf(schema);
  const values = "const" in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
  const required = list(schema.required).filter((key): key is string => typeof key === "string");
  const constants = fieldConstants(schema);
  const loose = (value: unknown) =>
    (types === undefined || types.has(jsonType(value)) || (types.has("number") && isNumber(value))) &&
    (values === undefined || values.some((v) => sameJsonKind(v, value))) &&
    (nested.length === 0 || nested.some((f) => f.loose(value)));
  const strict = (value: unknown) =>
    loose(value) &&
    (values === undefined || values.includes(value)) &&
    (nested.length === 0 || nested.some((f) => f.strict(value))) &&
    (!isSchema(value) ||
      (required.every((key) => Object.hasOwn(value, key)) && constantsHold(constants, value)));
  return { strict, loose };
}

/** The JSON types a schema allows, written or implied by its keywords; undefined: any. */
function typesOf(schema: Schema): Set<string> | undefined {
  if (typeof schema.type === "string") return new Set([schema.type]);
  if (Array.isArray(schema.type)) return new Set(schema.type.filter((t) => typeof t === "string"));
  if (schema.properties || schema.patternProperties || isSchema(schema.additionalProperties)) {
    return new Set(["object"]);
  }
  if (schema.items || schema.prefixItems) return new Set(["array"]);
  return undefined;
}

function fieldConstants(schema: Schema): Array<[string, unknown]> {
  const properties = isSchema(schema.properties) ? Object.entries(schema.properties) : [];
  return properties.flatMap(([key, field]) =>
    isSchema(field) && "const" in field ? [[key, field.const]] : [],
  );
}

const constantsHold = (constants: Array<[string, unknown]>, value: Schema) =>
  constants.every(([key, constant]) => !Object.hasOwn(value, key) || value[key] === constant);

/** The JSON Schema type of a value; an integer is "integer" (a "number" type accepts it too). */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

const isNumber = (value: unknown) => typeof value === "number";
const sameJsonKind = (a: unknown, b: unknown) => (isNumber(a) && isNumber(b)) || jsonType(a) === jsonType(b);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

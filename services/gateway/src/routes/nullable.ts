/**
 * Response schemas in OpenAPI 3.0's own terms: the protocol writes a nullable value as
 * `anyOf: [{ type: "null" }, X]` (TypeBox's Union), which OpenAPI 3.0 has no `null` type for, and which
 * fast-json-stringify can only serialize by running Ajv on every branch for every value (a few ms for a
 * list of a thousand projects: the envelope's `data` is such a union, so the whole list was validated on
 * every answer). A typed X becomes `{ ...X, nullable: true }`, a union of constants of one type an `enum`:
 * the same values, serialized by type checks alone, and a valid 3.0 document.
 */
type Schema = Record<string, unknown>;

const SCALARS = new Set(["string", "number", "integer", "boolean"]);
const TYPES = new Set([...SCALARS, "object", "array"]);

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `{ type, enum }` for a union of constants of one scalar type, else undefined. */
function asEnum(branches: unknown[]): Schema | undefined {
  const type = isSchema(branches[0]) ? branches[0].type : undefined;
  if (typeof type !== "string" || !SCALARS.has(type)) return undefined;
  const values: unknown[] = [];
  for (const branch of branches) {
    if (!isSchema(branch) || branch.type !== type || !("const" in branch)) return undefined;
    values.push(branch.const);
  }
  return { type, enum: values };
}

function simplifyUnion(schema: Schema): Schema {
  const branches = schema.anyOf as unknown[];
  const { anyOf: _, ...rest } = schema;
  const others = branches.filter((b) => !(isSchema(b) && b.type === "null" && Object.keys(b).length === 1));
  const nullable = others.length === branches.length - 1;
  let single: Schema | undefined;
  if (others.length === 1 && isSchema(others[0])) {
    const only = others[0];
    if (typeof only.type === "string" && TYPES.has(only.type) && nullable) single = only;
    else if (Array.isArray(only.anyOf)) single = asEnum(only.anyOf);
    else if (Array.isArray(only.enum) && only.enum.every((v) => typeof v === "string")) {
      single = { ...only, type: "string" };
    }
  } else {
    single = asEnum(others);
  }
  if (!single) return schema;
  // OpenAPI 3.0 (and Ajv, which fast-json-stringify consults for unions): an enum lists null itself.
  if (nullable && Array.isArray(single.enum)) single = { ...single, enum: [...single.enum, null] };
  return { ...rest, ...single, ...(nullable ? { nullable: true } : {}) };
}

/** A copy of `schema` with nullable scalars and constant unions rewritten, at every depth. */
export function openApiNullables<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((item) => openApiNullables(item)) as T;
  if (!isSchema(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = openApiNullables(value);
  return (Array.isArray(out.anyOf) ? simplifyUnion(out) : out) as T;
}

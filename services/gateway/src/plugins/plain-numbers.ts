import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifySchema } from "fastify";
import type { Server } from "../server.ts";
import { preValidationWhere } from "./route-hooks.ts";
import { itemsOf, objectShapeOf } from "./wire.ts";

/**
 * Numbers in the path, the query string and JSON bodies are plain decimals (rules.md §7.4, §8.5): the
 * validator coerces types (`"projectID": "5"` must work in a body, and a path is text), and coercion would
 * read `1e1`, `0x10`, `+5`, ` 5` or `true` as numbers too. A coerced id once deleted the wrong user, so
 * these are refused here, before validation, for every integer or number field of every route's `params`,
 * `querystring` and `body` (at any depth). In a body, a JSON number must be an integer in range where an
 * integer is asked; a string must be as in a path. Integers are unsigned unless their schema allows a
 * negative minimum (`GetProjects/{n}`): then a leading `-` is taken, still within int32.
 */
export const INT32_MAX = 2_147_483_647;
export const INT32_MIN = -2_147_483_648;
const PLAIN_INTEGER = /^[0-9]{1,10}$/;
const PLAIN_SIGNED = /^-?[0-9]{1,10}$/;
const PLAIN_DECIMAL = /^[0-9]{1,10}(?:\.[0-9]{1,10})?$/;
const INTEGER_PROBLEM = `must be a plain decimal integer from 0 to ${INT32_MAX}`;
const SIGNED_PROBLEM = `must be a plain decimal integer from ${INT32_MIN} to ${INT32_MAX}`;

/** `signed`: an integer whose schema allows negatives; `integer`: one that does not. */
export type NumberKind = "integer" | "signed" | "number";
const isInteger = (kind: NumberKind | undefined) => kind === "integer" || kind === "signed";

type JsonSchema = {
  type?: unknown;
  minimum?: number;
  properties?: Record<string, JsonSchema>;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
};

/** `integer`, `signed` or `number` when every non-null branch of the schema is one; undefined otherwise. */
export function numberKindOf(schema: JsonSchema): NumberKind | undefined {
  const types = [schema.type].flat().filter((t) => t !== undefined && t !== "null");
  if (types.length > 0) {
    if (types.every((t) => t === "integer")) return (schema.minimum ?? 0) < 0 ? "signed" : "integer";
    if (types.every((t) => t === "integer" || t === "number")) return "number";
    return undefined;
  }
  const branches = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].filter((b) => b.type !== "null");
  if (branches.length === 0) return undefined;
  const kinds = branches.map(numberKindOf);
  if (kinds.every(isInteger)) return kinds.includes("signed") ? "signed" : "integer";
  if (kinds.every((k) => k !== undefined)) return "number";
  return undefined;
}

const fieldsCache = new WeakMap<object, [string, NumberKind][]>();

/** The numeric fields of an object schema (path or query), by name. */
export function numericFieldsOf(schema: JsonSchema | undefined): [string, NumberKind][] {
  if (!schema?.properties) return [];
  let fields = fieldsCache.get(schema);
  if (!fields) {
    fields = Object.entries(schema.properties).flatMap(([name, property]): [string, NumberKind][] => {
      const kind = numberKindOf(property);
      return kind ? [[name, kind]] : [];
    });
    fieldsCache.set(schema, fields);
  }
  return fields;
}

/** What is wrong with a raw path or query value, or undefined when it is a plain decimal. */
export function plainNumberProblem(raw: string, kind: NumberKind): string | undefined {
  switch (kind) {
    case "integer":
      return PLAIN_INTEGER.test(raw) && Number(raw) <= INT32_MAX ? undefined : INTEGER_PROBLEM;
    case "signed":
      return PLAIN_SIGNED.test(raw) && Number(raw) >= INT32_MIN && Number(raw) <= INT32_MAX
        ? undefined
        : SIGNED_PROBLEM;
    default:
      return PLAIN_DECIMAL.test(raw) ? undefined : "must be a plain decimal number";
  }
}

const PROBLEM: Record<NumberKind, string> = {
  integer: INTEGER_PROBLEM,
  signed: SIGNED_PROBLEM,
  number: "must be a plain decimal number",
};

/** What is wrong with a JSON value of a numeric body field, or undefined when it is plain. */
export function jsonNumberProblem(value: unknown, kind: NumberKind): string | undefined {
  if (typeof value === "string") return plainNumberProblem(value, kind);
  if (typeof value !== "number") return PROBLEM[kind]; // true, [5], {...}
  if (kind === "number") return undefined;
  const min = kind === "signed" ? INT32_MIN : 0;
  return Number.isInteger(value) && value >= min && value <= INT32_MAX ? undefined : PROBLEM[kind];
}

/** Whether a body schema has a numeric field anywhere. */
function hasBodyNumbers(schema: JsonSchema | undefined): boolean {
  if (!schema) return false;
  if (numberKindOf(schema)) return true;
  const items = itemsOf(schema);
  if (items && hasBodyNumbers(items)) return true;
  return [...(objectShapeOf(schema)?.properties.values() ?? [])].some(hasBodyNumbers);
}

/**
 * The first numeric field of a body value (its keys already in the schema's spelling, plugins/wire.ts)
 * that is not plain: its JSON-pointer path and the problem. Null and absent fields are the validator's.
 */
export function bodyNumberProblem(
  value: unknown,
  schema: JsonSchema,
  path = "",
): [string, string] | undefined {
  if (value === undefined || value === null) return undefined;
  const kind = numberKindOf(schema);
  if (kind) {
    const problem = jsonNumberProblem(value, kind);
    return problem ? [path || "/", problem] : undefined;
  }
  if (typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    const items = itemsOf(schema);
    if (!items) return undefined;
    for (const [i, item] of value.entries()) {
      const found = bodyNumberProblem(item, items, `${path}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [name, property] of objectShapeOf(schema)?.properties ?? []) {
    if (!Object.hasOwn(value, name)) continue;
    const found = bodyNumberProblem((value as Record<string, unknown>)[name], property, `${path}/${name}`);
    if (found) return found;
  }
  return undefined;
}

/** Checks the path, query and body numbers of the routes that have any (route-hooks.ts). */
export function registerPlainNumbers(app: Server): void {
  const hasNumbers = (schema: FastifySchema | undefined) =>
    numericFieldsOf(schema?.params as JsonSchema | undefined).length > 0 ||
    numericFieldsOf(schema?.querystring as JsonSchema | undefined).length > 0 ||
    hasBodyNumbers(schema?.body as JsonSchema | undefined);
  // Registered after the wire format's hook (app.ts): body keys are in the schema's spelling here.
  preValidationWhere(
    app,
    (route) => hasNumbers(route.schema),
    (request, _reply, done) => {
      const schema = request.routeOptions.schema;
      const parts = [
        ["params", schema?.params, request.params],
        ["querystring", schema?.querystring, request.query],
      ] as const;
      for (const [part, partSchema, values] of parts) {
        for (const [name, kind] of numericFieldsOf(partSchema as JsonSchema | undefined)) {
          const value = (values as Record<string, unknown> | undefined)?.[name];
          if (value === undefined) continue;
          for (const raw of [value].flat()) {
            const problem = typeof raw === "string" ? plainNumberProblem(raw, kind) : undefined;
            if (problem) {
              done(errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid ${part}: /${name} ${problem}.`));
              return;
            }
          }
        }
      }
      const bodySchema = schema?.body as JsonSchema | undefined;
      const found = bodySchema && bodyNumberProblem(request.body, bodySchema);
      if (found) {
        done(errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid body: ${found[0]} ${found[1]}.`));
        return;
      }
      done();
    },
  );
}

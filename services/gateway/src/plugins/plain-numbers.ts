import { ErrorCode, errors } from "@fundraise/protocol";
import type { FastifySchema } from "fastify";
import type { Server } from "../server.ts";
import { preValidationWhere } from "./route-hooks.ts";

/**
 * Numbers in the path and the query string are plain decimals (behaviour.md §7): the validator
 * coerces types for JSON bodies (`"projectID": "5"` must work), and coercion would read `1e1`, `0x10`,
 * `+5` or ` 5` as numbers too. A coerced id once deleted the wrong user, so these are refused here,
 * before validation, for every integer or number field of every route's `params` and `querystring`.
 * Integers are unsigned unless their schema allows a negative minimum (`GetProjects/{n}`): then a
 * leading `-` is taken, still within int32.
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
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
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

/** Checks the path and query numbers of the routes that have any (route-hooks.ts). */
export function registerPlainNumbers(app: Server): void {
  const hasNumbers = (schema: FastifySchema | undefined) =>
    numericFieldsOf(schema?.params as JsonSchema | undefined).length > 0 ||
    numericFieldsOf(schema?.querystring as JsonSchema | undefined).length > 0;
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
      done();
    },
  );
}

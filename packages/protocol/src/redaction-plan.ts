import type { TSchema } from "typebox";
import { type PersonalKind, personalKindOf } from "./personal-schema.ts";
import { type Fit, fitOf, isSchema, resolverOf, type Schema } from "./schema-shape.ts";

/**
 * Where personal values are in the values of one schema, compiled once from the schema: only the parts of the
 * schema that lead to a personal field are kept, so a walk never visits the rest of the schema again.
 * Lists of plans (`Plans`) are what a value's child is walked with: several apply when a union has several
 * branches that fit, or a `$ref` or `allOf` adds to a schema.
 */
export type Plans = readonly Plan[];

export interface Plan {
  /** The whole value is personal: replaced, whatever its shape. */
  kind: PersonalKind | undefined;
  /** Object fields by name (`properties`): every declared name, with nothing to apply to most. */
  fields: Map<string, Plans>;
  /** Fields by pattern (`patternProperties`, `Type.Record`). */
  patterns: Array<{ pattern: RegExp; plans: Plans }>;
  /** Any field neither declared nor matching a pattern (`additionalProperties`). */
  others: Plans;
  /** Array elements by position (tuples), then every other element. */
  positions: Plans[];
  items: Plans;
  /** `anyOf` / `oneOf`: each branch with the test of whether a value has its shape. */
  branches: Branch[];
  /** Plans that apply to the same value as well (`allOf`, `$ref`). */
  also: Plan[];
}

export interface Branch {
  fit: Fit;
  /** Absent when the branch holds nothing personal (e.g. `Nullable`'s null). */
  plan: Plan | undefined;
}

export const NO_PLANS: Plans = [];

interface Compilation {
  resolve: (ref: string) => Schema | undefined;
  done: Map<Schema, Plan | undefined>;
  /** Schemas being compiled: a `$ref` back to one of them (a cyclic schema) gets its plan as it stands. */
  open: Map<Schema, Plan>;
}

/** The plan of a schema, or undefined when no part of it can hold a personal value. */
export function planOf(schema: TSchema): Plan | undefined {
  return compile(schema, { resolve: resolverOf(schema as Schema), done: new Map(), open: new Map() });
}

function compile(schema: unknown, c: Compilation): Plan | undefined {
  if (!isSchema(schema)) return undefined;
  if (c.done.has(schema)) return c.done.get(schema);
  const open = c.open.get(schema);
  if (open) return open;
  const plan = emptyPlan();
  c.open.set(schema, plan);
  fill(plan, schema, c);
  c.open.delete(schema);
  const result = isEmpty(plan) ? undefined : plan;
  c.done.set(schema, result);
  return result;
}

function fill(plan: Plan, schema: Schema, c: Compilation): void {
  plan.kind = personalKindOf(schema);
  for (const [name, field] of entries(schema.properties)) plan.fields.set(name, plansOf(field, c));
  for (const [source, field] of entries(schema.patternProperties)) {
    plan.patterns.push({ pattern: patternOf(source), plans: plansOf(field, c) });
  }
  plan.others = plansOf(schema.additionalProperties, c);
  // Tuples: draft 2020-12 `prefixItems` + `items`, or the older `items: [...]` + `additionalItems`.
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : schema.items;
  if (Array.isArray(tuple)) {
    plan.positions = tuple.map((item) => plansOf(item, c));
    plan.items = plansOf(tuple === schema.items ? schema.additionalItems : schema.items, c);
  } else {
    plan.items = plansOf(schema.items, c);
  }
  const union = [...list(schema.anyOf), ...list(schema.oneOf)];
  const branches = union.map((branch) => ({ fit: fitOf(branch, c.resolve), plan: compile(branch, c) }));
  if (branches.some((b) => b.plan)) plan.branches = branches;
  // A conditional's `then` / `else` may apply: taken as applying (a wrongly kept value is the worse error).
  const alike = [...list(schema.allOf), schema.then, schema.else, refTarget(schema, c)];
  for (const other of alike) {
    const compiled = compile(other, c);
    if (compiled) plan.also.push(compiled);
  }
}

function plansOf(schema: unknown, c: Compilation): Plans {
  const plan = compile(schema, c);
  return plan ? [plan] : NO_PLANS;
}

function refTarget(schema: Schema, c: Compilation): Schema | undefined {
  return typeof schema.$ref === "string" ? c.resolve(schema.$ref) : undefined;
}

/** A JSON Schema pattern as a RegExp; one JavaScript cannot read matches every name (the safe side). */
function patternOf(source: string): RegExp {
  try {
    return new RegExp(source, "u");
  } catch {
    try {
      return new RegExp(source);
    } catch {
      return /(?:)/;
    }
  }
}

function emptyPlan(): Plan {
  return {
    kind: undefined,
    fields: new Map(),
    patterns: [],
    others: NO_PLANS,
    positions: [],
    items: NO_PLANS,
    branches: [],
    also: [],
  };
}

function isEmpty(plan: Plan): boolean {
  return (
    plan.kind === undefined &&
    [...plan.fields.values()].every((p) => p.length === 0) &&
    plan.patterns.every((p) => p.plans.length === 0) &&
    plan.others.length === 0 &&
    plan.positions.every((p) => p.length === 0) &&
    plan.items.length === 0 &&
    plan.branches.length === 0 &&
    plan.also.length === 0
  );
}

const entries = (value: unknown): Array<[string, unknown]> => (isSchema(value) ? Object.entries(value) : []);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

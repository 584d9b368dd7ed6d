import type { TSchema } from "typebox";
import type { PersonalKind, Pseudonymize } from "./personal-schema.ts";
import { NO_PLANS, type Plan, type Plans, planOf } from "./redaction-plan.ts";

/** A value with its personal values replaced, and where they were (JSON-pointer-like paths, "/" the root). */
export interface Redacted {
  value: unknown;
  paths: string[];
}

export type Redactor = (value: unknown, pseudonymize: Pseudonymize) => Redacted;

const redactors = new WeakMap<TSchema, Redactor | null>();

/**
 * A function that returns a deep copy of `value` with every value found at an `x-personal` field replaced by
 * pseudonymize(kind, String(value)) (numbers too: a nonce is an integer), and the paths it replaced (e.g.
 * "/user/mailAddress", "/0/mailAddress", "/data/origin/ip"); null values and absent fields stay as they are.
 * A value that does not have the schema's shape is copied as far as it fits, never refused.
 * Returns null when the schema has no personal field anywhere (callers then skip all work: this is on a hot
 * path). Compiled once per schema object and cached.
 */
export function redactorOf(schema: TSchema): Redactor | null {
  let redactor = redactors.get(schema);
  if (redactor === undefined) {
    const plan = planOf(schema);
    redactor = plan && declared(plan).length > 0 ? redactorFor(plan) : null;
    redactors.set(schema, redactor);
  }
  return redactor;
}

/** The paths of every personal field a schema declares (array elements and any-named fields as "/*"). */
export function personalPaths(schema: TSchema): Array<{ path: string; kind: PersonalKind }> {
  const plan = planOf(schema);
  return plan ? declared(plan) : [];
}

function redactorFor(plan: Plan): Redactor {
  const plans = [plan];
  return (value, pseudonymize) => {
    const walk: Walk = { pseudonymize, paths: [] };
    return { value: redact(value, plans, "", walk), paths: walk.paths };
  };
}

interface Walk {
  pseudonymize: Pseudonymize;
  paths: string[];
}

function redact(value: unknown, plans: Plans, path: string, walk: Walk): unknown {
  if (value === null || value === undefined) return value;
  const applying = applyingTo(value, plans);
  const kind = applying.find((plan) => plan.kind !== undefined)?.kind;
  if (kind !== undefined) {
    walk.paths.push(path || "/");
    return walk.pseudonymize(kind, textOf(value));
  }
  if (Array.isArray(value))
    return value.map((item, i) => redact(item, itemPlans(applying, i), `${path}/${i}`, walk));
  if (!isPlainObject(value)) return copyOf(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const child = fieldPlans(applying, key);
    const item = value[key];
    setField(
      copy,
      key,
      child.length === 0 ? copyOf(item) : redact(item, child, `${path}/${pointerToken(key)}`, walk),
    );
  }
  return copy;
}

/** The plans that apply to this value: unions narrowed to the branches it fits, `allOf` and `$ref` added. */
function applyingTo(value: unknown, plans: Plans): Plans {
  // The common case (no union, nothing added) allocates nothing.
  if (plans.length === 1 && plans[0]!.branches.length === 0 && plans[0]!.also.length === 0) return plans;
  const out: Plan[] = [];
  for (const plan of plans) addApplying(value, plan, out, 0);
  return out;
}

function addApplying(value: unknown, plan: Plan, out: Plan[], depth: number): void {
  if (out.includes(plan) || depth > 16) return;
  out.push(plan);
  for (const also of plan.also) addApplying(value, also, out, depth + 1);
  if (plan.branches.length === 0) return;
  // Every branch the value fits; when it fits none (a value of another shape), every branch that could hold
  // something personal: keeping a personal value is the worse error.
  let fitting = plan.branches.filter((b) => b.fit.strict(value));
  if (fitting.length === 0) fitting = plan.branches.filter((b) => b.fit.loose(value));
  if (fitting.length === 0) fitting = plan.branches;
  for (const branch of fitting) if (branch.plan) addApplying(value, branch.plan, out, depth + 1);
}

function itemPlans(applying: Plans, index: number): Plans {
  if (applying.length === 1) return applying[0]!.positions[index] ?? applying[0]!.items;
  return applying.flatMap((plan) => plan.positions[index] ?? plan.items);
}

function fieldPlans(applying: Plans, key: string): Plans {
  if (applying.length === 1) return fieldPlansOf(applying[0]!, key);
  return applying.flatMap((plan) => fieldPlansOf(plan, key));
}

/** The plans of one field: by its name, else by the first pattern it matches, else the other fields'. */
function fieldPlansOf(plan: Plan, key: string): Plans {
  const named = plan.fields.get(key);
  if (named !== undefined && named.length > 0) return named;
  for (const { pattern, plans } of plan.patterns) if (pattern.test(key)) return plans;
  return named === undefined ? plan.others : NO_PLANS;
}

/** A deep copy of plain data (objects, arrays); anything else (a Buffer, a Date) is kept as it is. */
function copyOf(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setField(copy, key, copyOf(value[key]));
  return copy;
}

/** Sets a field, `__proto__` too (a parsed message may have one): never the copy's prototype. */
function setField(copy: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(copy, key, { value, enumerable: true, writable: true });
  else copy[key] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The text a personal value is pseudonymized from: numbers as written, anything else as JSON. */
function textOf(value: unknown): string {
  if (typeof value !== "object") return String(value);
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}

const pointerToken = (key: string) =>
  key.includes("~") || key.includes("/") ? key.replaceAll("~", "~0").replaceAll("/", "~1") : key;

/** Every personal field of a plan, once each; a cyclic schema's fields down to its first repetition. */
function declared(plan: Plan): Array<{ path: string; kind: PersonalKind }> {
  const found = new Map<string, { path: string; kind: PersonalKind }>();
  const visit = (p: Plan, path: string, open: ReadonlyMap<Plan, number>) => {
    const entered = open.get(p) ?? 0;
    if (entered > 1) return;
    if (p.kind !== undefined) found.set(`${path}|${p.kind}`, { path: path || "/", kind: p.kind });
    const inner = new Map(open).set(p, entered + 1);
    const each = (plans: Plans, at: string) => {
      for (const child of plans) visit(child, at, inner);
    };
    for (const [key, plans] of p.fields) each(plans, `${path}/${pointerToken(key)}`);
    for (const { plans } of p.patterns) each(plans, `${path}/*`);
    each(p.others, `${path}/*`);
    p.positions.forEach((plans, i) => {
      each(plans, `${path}/${i}`);
    });
    each(p.items, `${path}/*`);
    each(
      p.branches.flatMap((b) => (b.plan ? [b.plan] : [])),
      path,
    );
    each(p.also, path);
  };
  visit(plan, "", new Map());
  return [...found.values()];
}

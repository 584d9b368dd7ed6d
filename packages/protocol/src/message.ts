import type { Static, TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { ErrorCode } from "./error-codes.ts";
import { errors } from "./errors.ts";

/** Services that answer RPC. The queue of service `s` is `s.rpc`. */
export const SERVICES = ["auth", "users", "projects", "storage", "chain"] as const;
export type ServiceName = (typeof SERVICES)[number];

/** A question with an answer: `<service>.<entity>.<verb>`. */
export interface RpcDescriptor<Req extends TSchema = TSchema, Res extends TSchema = TSchema> {
  readonly type: "rpc";
  readonly name: string;
  readonly service: ServiceName;
  readonly request: Req;
  readonly response: Res;
  /** Default deadline for a call; uploads and chain reads ask for more. */
  readonly timeoutMs: number | undefined;
  /**
   * Whether the replayable journal, which keeps messages for days, gets a copy of the request and its
   * reply: `true` (the default) or `false` for calls that carry secrets (signatures, tokens, JWTs).
   */
  readonly journal: JournalMode;
  /**
   * Whether a service keeps the answer to a call with an Idempotency-Key for its retry (ADR 0029): `true`
   * (the default) or `false` for an answer that is a secret (a token), not to be kept at rest.
   */
  readonly answerKept: boolean;
  /**
   * Whether calls made in the same turn of the caller's event loop may share one message (the bus's
   * batches). False for calls that pick the instance that serves what follows (a stream's open): a burst
   * of them must spread over the instances, not all land on the one that takes the batch.
   */
  readonly batched: boolean;
  /**
   * What a call does to the platform's state: `read` changes nothing (a lookup, a count, a list, a chain
   * read; rebuilding a cache counts as reading), `write` may change something. A replay re-executes reads
   * only; `write` is the default, so a descriptor that says nothing is never re-executed by mistake.
   */
  readonly effect: RpcEffect;
}

export type JournalMode = boolean;

export const RPC_EFFECTS = ["read", "write"] as const;
export type RpcEffect = (typeof RPC_EFFECTS)[number];

/** A fact that happened: `<service>.<entity>.<past-participle>`. */
export interface EventDescriptor<P extends TSchema = TSchema> {
  readonly type: "event";
  readonly name: string;
  readonly payload: P;
}

export type RequestOf<D extends RpcDescriptor> = Static<D["request"]>;
export type ResponseOf<D extends RpcDescriptor> = Static<D["response"]>;
export type PayloadOf<D extends EventDescriptor> = Static<D["payload"]>;

export function defineRpc<Req extends TSchema, Res extends TSchema>(
  name: `${ServiceName}.${string}.${string}`,
  shape: {
    request: Req;
    response: Res;
    timeoutMs?: number;
    journal?: JournalMode;
    answerKept?: boolean;
    batched?: boolean;
    effect?: RpcEffect;
  },
): RpcDescriptor<Req, Res> {
  const service = name.slice(0, name.indexOf(".")) as ServiceName;
  return {
    type: "rpc",
    name,
    service,
    request: shape.request,
    response: shape.response,
    timeoutMs: shape.timeoutMs,
    journal: shape.journal ?? true,
    answerKept: shape.answerKept ?? true,
    batched: shape.batched ?? true,
    effect: shape.effect ?? "write",
  };
}

export function defineEvent<P extends TSchema>(name: string, payload: P): EventDescriptor<P> {
  return { type: "event", name, payload };
}

export interface Issue {
  path: string;
  message: string;
}

export interface Validator<T> {
  check(value: unknown): value is T;
  issues(value: unknown): Issue[];
  /** Returns the value typed, or throws a `validation` AppError listing every issue. */
  assert(value: unknown, what?: string): T;
}

const cache = new WeakMap<TSchema, Validator<unknown>>();

/** A compiled validator per schema, compiled once and cached. */
export function validatorOf<S extends TSchema>(schema: S): Validator<Static<S>> {
  const hit = cache.get(schema);
  if (hit) return hit as Validator<Static<S>>;
  const compiled = Compile(schema);
  const validator: Validator<Static<S>> = {
    check: (value): value is Static<S> => compiled.Check(value),
    issues: (value) =>
      [...compiled.Errors(value)]
        .slice(0, 20)
        .map((e) => ({ path: e.instancePath || "/", message: e.message })),
    assert(value, what = "message") {
      if (compiled.Check(value)) return value as Static<S>;
      const issues = validator.issues(value);
      const summary = issues.map((i) => `${i.path} ${i.message}`).join("; ");
      throw errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid ${what}: ${summary}`, {
        details: issues,
      });
    },
  };
  cache.set(schema, validator as Validator<unknown>);
  return validator;
}

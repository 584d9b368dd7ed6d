import createFetchClient, {
  type Client,
  type ClientPathsWithMethod,
  type MaybeOptionalInit,
  type MethodResponse,
} from "openapi-fetch";
import { ApiError, isRecord } from "./errors.ts";
import type { paths } from "./generated/schema.ts";
import {
  isRetryable,
  keysWrites,
  type RetryOptions,
  retryAfterMs,
  retryPolicy,
  sleep,
  waitBefore,
} from "./retry.ts";
import { openStream, type SubscribeHandlers, type SubscribeOptions, type Subscription } from "./subscribe.ts";

export type { paths } from "./generated/schema.ts";

type HttpMethod = "get" | "put" | "post" | "delete" | "patch";
type Media = `${string}/${string}`;

/** The openapi-fetch client underneath: status, headers and the whole envelope, for what `data` hides. */
export type RawClient = Client<paths, Media>;

/**
 * The answer of a call: the envelope's `data` (the few routes without the envelope, such as the JWKS,
 * answer as they are). The document marks every envelope's `data` nullable, so the type includes `null`.
 */
export type DataOf<Answer> = Answer extends { data: infer D; success: boolean; message: unknown }
  ? D
  : Answer;

// openapi-fetch's own rules: the second argument is optional when the route needs no params or body.
type RequiredKeys<T> = { [K in keyof T]: object extends Pick<T, K> ? never : K }[keyof T];
type InitArgs<Init> =
  RequiredKeys<Init> extends never
    ? [(Init & { [key: string]: unknown })?]
    : [Init & { [key: string]: unknown }];

/** A typed call of one method: the path from the document, its params and body, `data` as the answer. */
export type Call<M extends HttpMethod> = <
  P extends ClientPathsWithMethod<RawClient, M>,
  Init extends MaybeOptionalInit<paths[P], M>,
>(
  path: P,
  ...init: InitArgs<Init>
) => Promise<DataOf<MethodResponse<RawClient, M, P, Init>>>;

export interface ClientOptions {
  /** The gateway, e.g. `http://localhost:8080` (no trailing path). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every call until `setToken` changes it. */
  token?: string;
  /** The fetch to use (globalThis.fetch by default), for calls and the stream alike. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers for every call and the stream. */
  headers?: Record<string, string>;
  /**
   * Sending a call again after a lost or "not now" answer (502, 503, 504, 409 IDEMPOTENCY_KEY_IN_USE):
   * reads, and writes with their `Idempotency-Key`, which the client gives each write (except sign-up
   * and sign-in) unless the call brings its own, so a write sent again is done once. `false`: never.
   */
  retry?: RetryOptions | false;
}

export interface FundraiseClient {
  GET: Call<"get">;
  POST: Call<"post">;
  PUT: Call<"put">;
  DELETE: Call<"delete">;
  PATCH: Call<"patch">;
  /** The token for later calls (and the stream's next connection); null or undefined signs out. */
  setToken(token: string | null | undefined): void;
  readonly token: string | undefined;
  /** Live updates over the gateway's Server-Sent Events stream. */
  subscribe(handlers: SubscribeHandlers, options?: SubscribeOptions): Subscription;
  /** The same calls undigested (openapi-fetch): `{ data, error, response }`, the token included. */
  raw: RawClient;
}

const isEnvelope = (body: unknown): body is { data: unknown; success: boolean; message: unknown } =>
  isRecord(body) && typeof body.success === "boolean" && "data" in body && "message" in body;

export function createClient(options: ClientOptions): FundraiseClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const headers = options.headers ?? {};
  let token = options.token || undefined;

  const raw: RawClient = createFetchClient<paths, Media>({ baseUrl, fetch: doFetch, headers });
  raw.use({
    onRequest({ request }) {
      // A call's own Authorization header (`headers` in its options) wins.
      if (token && !request.headers.has("authorization")) {
        request.headers.set("authorization", `Bearer ${token}`);
      }
      return request;
    },
  });

  const policy = retryPolicy(options.retry);
  const hasKey = (h: unknown) =>
    isRecord(h) && Object.keys(h).some((name) => name.toLowerCase() === "idempotency-key");

  const call =
    <M extends HttpMethod>(method: M): Call<M> =>
    async (path, ...init) => {
      const request = raw.request as (
        method: string,
        path: string,
        init?: unknown,
      ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
      const given = init[0] as { headers?: Record<string, string>; signal?: AbortSignal } | undefined;
      const signal = given?.signal;
      const keyed = hasKey(given?.headers) || hasKey(headers);
      // One key for every send of this call: the gateway does the write once, and answers it again.
      const autoKey = policy.attempts > 1 && !keyed && keysWrites(method, path);
      const sent = autoKey
        ? { ...given, headers: { ...given?.headers, "idempotency-key": globalThis.crypto.randomUUID() } }
        : given;
      const safe = method === "get" || keyed || autoKey;
      for (let attempt = 1; ; attempt++) {
        // Never sent again once its caller gave it up.
        const again = safe && attempt < policy.attempts && !signal?.aborted;
        let answer: Awaited<ReturnType<typeof request>>;
        try {
          answer = await request(method, path, sent);
        } catch (error) {
          // No answer (the network): the call may have arrived; sent again only when that is safe.
          if (!again) throw error;
          await sleep(waitBefore(attempt, policy, undefined), signal);
          signal?.throwIfAborted();
          continue;
        }
        const { data, error, response } = answer;
        const failure = !response.ok
          ? ApiError.of(response, error)
          : isEnvelope(data) && !data.success
            ? ApiError.of(response, data)
            : null;
        if (!failure) return (isEnvelope(data) ? data.data : data) as never;
        if (!again || !isRetryable(failure.status, failure.code)) throw failure;
        await sleep(waitBefore(attempt, policy, retryAfterMs(response)), signal);
        signal?.throwIfAborted();
      }
    };

  return {
    GET: call("get"),
    POST: call("post"),
    PUT: call("put"),
    DELETE: call("delete"),
    PATCH: call("patch"),
    setToken(next) {
      token = next || undefined;
    },
    get token() {
      return token;
    },
    subscribe: (handlers, subscribeOptions) =>
      openStream({ baseUrl, fetch: doFetch, headers, token: () => token }, handlers, subscribeOptions),
    raw,
  };
}

/** The gateway's answer to a call that failed: any non-2xx status, or an envelope with `success: false`. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** The HTTP status. */
  readonly status: number;
  /** The envelope's `code` when it has one, else the gateway's `x-error-code` header (`TOKEN_MISSING`, …). */
  readonly code: string | undefined;
  /** The body as received: the parsed JSON envelope, or the text when it was not JSON. */
  readonly body: unknown;

  constructor(status: number, message: string, options: { code?: string | undefined; body?: unknown } = {}) {
    super(message);
    this.status = status;
    this.code = options.code;
    this.body = options.body;
  }

  /** The error of an answer whose body was already read (`body`: parsed JSON, or text). */
  static of(response: Response, body: unknown): ApiError {
    const envelope = isRecord(body) ? body : {};
    const message =
      typeof envelope.message === "string" && envelope.message !== ""
        ? envelope.message
        : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    const code =
      typeof envelope.code === "string" ? envelope.code : (response.headers.get("x-error-code") ?? undefined);
    return new ApiError(response.status, message, { code, body });
  }

  /** The error of an answer whose body is still unread. */
  static async from(response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => "");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON (a proxy's error page): the text is the body.
    }
    return ApiError.of(response, body);
  }
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

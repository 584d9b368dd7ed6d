import type { Bus } from "@fundraise/bus";
import { AuthRpc, Jwks, UserLoginRequest, UserRegisterRequest } from "@fundraise/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import Type from "typebox";
import type { Server } from "../server.ts";
import { registerRpcRoute } from "./define.ts";
import { AddressParams, addressParam, NoInput } from "./params.ts";

const tag = "Authentication";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A browser following the mail link gets a page that says what happened and goes home in ~3 s. */
export function verifyEmailPage(message: string, appUrl: string): string {
  const url = escapeHtml(appUrl);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="3;url=${url}">
<title>E-mail verification</title></head>
<body><p>${escapeHtml(message)}</p><p>Returning to <a href="${url}">the home page</a>…</p></body></html>`;
}

const wantsHtml = (request: FastifyRequest) => {
  const accept = request.headers.accept ?? "";
  return accept.includes("text/html") && !accept.startsWith("application/json");
};

/** The Authentication controller (rules.md §2) and the public keys that verify its tokens. */
export function registerAuthRoutes(
  app: Server,
  bus: Bus,
  options: { authPerMinute: number; publicAppUrl: string },
): void {
  const perMinute = options.authPerMinute;
  const page = (reply: FastifyReply, message: string) =>
    reply.type("text/html; charset=utf-8").send(verifyEmailPage(message, options.publicAppUrl));
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Authentication/GetNonce/:address",
    tag,
    summary: "A fresh single-use nonce for an address (5 minutes)",
    access: "anonymous",
    input: { params: AddressParams },
    perMinute,
    rpc: AuthRpc.nonce,
    request: ({ params, ip }) => ({ address: addressParam(params.address), origin: { ip } }),
  });
  registerRpcRoute(app, bus, {
    method: "POST",
    url: "/Authentication/Login",
    tag,
    summary: "Sign in with a signed nonce (legacy `LOGIN: <nonce>`, EIP-4361, EIP-1271); data is the JWT",
    access: "anonymous",
    input: { body: UserLoginRequest },
    perMinute,
    rpc: AuthRpc.login,
    request: ({ body, ip }) => ({ login: body, origin: { ip } }),
  });
  registerRpcRoute(app, bus, {
    method: "POST",
    url: "/Authentication/Register",
    tag,
    summary: "Create an account and send the verification e-mail; data is the new user's id",
    access: "anonymous",
    input: { body: UserRegisterRequest },
    perMinute,
    rpc: AuthRpc.register,
    answer: { status: 201 },
    request: ({ body, ip }) => ({ register: body, origin: { ip } }),
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/Authentication/verify-email",
    tag,
    summary: "Follow the e-mail verification link (HTML for browsers, envelope for JSON clients)",
    access: "anonymous",
    input: {
      querystring: Type.Object({
        email: Type.String({ minLength: 1, maxLength: 254 }),
        token: Type.String({ minLength: 1, maxLength: 128 }),
      }),
    },
    rpc: AuthRpc.verifyEmail,
    request: ({ query }) => ({ email: query.email, token: query.token }),
    answer: {
      send: (reply: FastifyReply, request: FastifyRequest, data: unknown) =>
        wantsHtml(request) ? page(reply, String(data)) : undefined,
      sendError: (reply, request, error) => (wantsHtml(request) ? page(reply, error.message) : undefined),
    },
  });
  registerRpcRoute(app, bus, {
    method: "GET",
    url: "/.well-known/jwks.json",
    tag,
    summary: "Public keys that verify access tokens (JWKS)",
    access: "anonymous",
    input: { querystring: NoInput },
    rpc: AuthRpc.jwks,
    request: () => ({}),
    // Standard JWKS consumers expect the bare key set, not the envelope.
    answer: { schema: Jwks, bare: true },
    // Public keys: the one answer worth caching; a rotated key is refetched by its new `kid`.
    cache: { control: "public, max-age=60" },
  });
}

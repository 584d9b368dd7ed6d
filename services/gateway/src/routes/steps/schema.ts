import { type RpcDescriptor, ServiceResponse } from "@fundraise/protocol";
import Type from "typebox";
import { openApiNullables } from "../nullable.ts";
import type { InputSchemas, RouteSchema, RpcRoute } from "../route.ts";

export const ErrorEnvelope = Type.Object({
  data: Type.Null(),
  success: Type.Literal(false),
  message: Type.String(),
});

/**
 * `$id`s are dropped from schemas embedded in routes: one shared schema object appears in many
 * routes, and a validator that sees the same `$id` twice refuses it. Parts set to `undefined` go too.
 */
export function inline<T extends object>(schema: T): T {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === "$id" ? undefined : value)));
}

/**
 * Validate: the route's schema as fastify gets it. Its `input` parts validate (and coerce) the path,
 * query and body before the handler runs; its responses serialize the answer and, with the tag and
 * summary, make the route's entry in the OpenAPI document.
 */
export function routeSchema<D extends RpcDescriptor, S extends InputSchemas>(
  route: RpcRoute<D, S>,
): RouteSchema<S> {
  const status = route.answer?.status ?? 200;
  const dataSchema = inline(route.answer?.schema ?? route.rpc.response);
  const answerSchema = () =>
    openApiNullables(inline(route.answer?.bare ? dataSchema : ServiceResponse(dataSchema)));
  return {
    // Through JSON, which also leaves out the input parts the route does not have.
    ...inline({
      tags: [route.tag],
      summary: route.summary,
      ...(route.access === "anonymous" ? {} : { security: [{ bearer: [] }] }),
      params: route.input.params,
      querystring: route.input.querystring,
      body: route.input.body,
    }),
    // Checked when fastify serializes the answer; typed by the RPC's response, not here.
    response: {
      ...(route.answer?.statusOf ? { 200: answerSchema() } : {}),
      [status]: answerSchema(),
      "4xx": ErrorEnvelope,
      "5xx": ErrorEnvelope,
    },
  };
}

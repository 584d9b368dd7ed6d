import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Logger } from "@fundraise/service-kit";
import type {
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";

/**
 * The gateway's fastify instance. The TypeBox type provider gives every handler its `params`, `query`
 * and `body` types from the route's schemas (validation itself stays with fastify's Ajv, which coerces).
 */
export type Server = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  Logger,
  TypeBoxTypeProvider
>;

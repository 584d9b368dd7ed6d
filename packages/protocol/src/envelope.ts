import Type, { type Static, type TSchema } from "typebox";

/**
 * ServiceResponse<T>, the envelope of every HTTP response and every RPC reply:
 * `{ data, success, message }`, nulls written out.
 */
export const ServiceResponse = <T extends TSchema>(data: T) =>
  Type.Object({
    data: Type.Union([data, Type.Null()]),
    success: Type.Boolean(),
    message: Type.Union([Type.String(), Type.Null()]),
  });

export interface Envelope<T> {
  data: T | null;
  success: boolean;
  message: string | null;
}

export type ServiceResponseOf<T extends TSchema> = Envelope<Static<T>>;

export const ok = <T>(data: T, message: string | null = null): Envelope<T> => ({
  data,
  success: true,
  message,
});
export const fail = (message: string): Envelope<null> => ({ data: null, success: false, message });

import { ADDRESS_PROBLEM, Address, ErrorCode, errors, parseAddress } from "@fundraise/protocol";
import Type from "typebox";

/**
 * Path and query shapes shared by the route files. Integers there are plain decimal digits within
 * int32 (`^[0-9]{1,10}$`, no sign, no exponent, no spaces), enforced for every route by
 * plugins/plain-numbers.ts before the validator's type coercion can read `1e1` as 10. A signed one
 * (`SignedInt32`) may have a leading `-`.
 */
export const Int32 = Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: "decimal digits only" });
export const SignedInt32 = Type.Integer({
  minimum: -2_147_483_648,
  maximum: 2_147_483_647,
  description: "decimal digits, optionally after a minus sign",
});
export const IdParams = Type.Object({ id: Int32 });
export const AddressParams = Type.Object({ address: Address });
export const NoInput = Type.Object({});

/**
 * A path address as EIP-55, under the platform's one rule (protocol address.ts): the schema's pattern
 * checks the shape, this the checksum of a mixed-case address. Anything else is the caller's 400.
 */
export function addressParam(value: string, field = "address"): string {
  const address = parseAddress(value);
  if (!address)
    throw errors.validation(ErrorCode.VALIDATION_FAILED, `Invalid params: /${field} ${ADDRESS_PROBLEM}.`);
  return address;
}

/** Decodes a hex string (optional `0x`) to bytes; anything else is the caller's 400. */
export function hexToBytes(hex: string, field: string): Uint8Array {
  const digits = hex.startsWith("0x") || hex.startsWith("0X") ? hex.slice(2) : hex;
  // Node's decoder alone is not strict (it takes the low byte of a full-width "ａ"): the pattern decides.
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) {
    throw errors.validation(
      ErrorCode.VALIDATION_FAILED,
      `${field} must be a hexadecimal string of whole bytes.`,
    );
  }
  // A view of the decoded buffer, not a copy made element by element.
  const bytes = Buffer.from(digits, "hex");
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Path segments match case-insensitively, as the routes do: `approved` is `Approved`. */
export function oneOf<T extends string>(value: string, allowed: readonly T[], field: string): T {
  const found = allowed.find((a) => a.toLowerCase() === value.toLowerCase());
  if (!found) {
    throw errors.validation(ErrorCode.VALIDATION_FAILED, `${field} must be one of ${allowed.join(", ")}.`);
  }
  return found;
}

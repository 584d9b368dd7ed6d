import { getAddress } from "ethers/address";
import Type from "typebox";

/**
 * The platform's one rule for EVM addresses (rules.md §2.1: compared case-insensitively, stored and
 * returned EIP-55):
 * - `0x` and 40 hex digits;
 * - all lower-case or all upper-case digits carry no checksum: accepted and checksummed;
 * - mixed case is an EIP-55 checksum and must be a valid one. A wrong one is a typo (a changed letter
 *   flips the case of others), so it is refused (400), never silently "corrected" to another address.
 */
export const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

/** What a refused address is told, after the field's name. */
export const ADDRESS_PROBLEM =
  "must be an EVM address: 0x and 40 hex digits, EIP-55 checksummed if mixed case";

/** The EIP-55 form of an address under the rule above, or undefined. White space around it is ignored. */
export function parseAddress(input: string): string | undefined {
  const value = input.trim();
  if (!ADDRESS_PATTERN.test(value)) return undefined;
  const checksummed = checksumOf(value.slice(2).toLowerCase());
  // No checksum to check in one case; mixed case must be exactly the EIP-55 form.
  const digits = value.slice(2);
  if (digits === digits.toLowerCase() || digits === digits.toUpperCase()) return checksummed;
  return value === checksummed ? checksummed : undefined;
}

/**
 * EIP-55 of 40 lower-case hex digits, remembered: the checksum is a keccak256 in JavaScript (about
 * 40 µs), and one sign-in parses the same address four times across the gateway and the auth service.
 * Bounded: past `CHECKSUMS_KEPT` entries the oldest go first.
 */
const CHECKSUMS_KEPT = 10_000;
const checksums = new Map<string, string>();
function checksumOf(lowerDigits: string): string {
  let checksummed = checksums.get(lowerDigits);
  if (checksummed === undefined) {
    checksummed = getAddress(`0x${lowerDigits}`);
    if (checksums.size >= CHECKSUMS_KEPT) checksums.delete(checksums.keys().next().value as string);
    checksums.set(lowerDigits, checksummed);
  }
  return checksummed;
}

/**
 * An address field. A pattern cannot check a checksum: whoever takes an address from a client applies
 * `parseAddress` too (the gateway does for path addresses), and the platform only sends EIP-55.
 */
export const Address = Type.String({
  pattern: ADDRESS_PATTERN.source,
  description: "EVM address, 0x + 40 hex; EIP-55 checksummed if mixed case; returned EIP-55",
  examples: ["0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"],
});

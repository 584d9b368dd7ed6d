import { ErrorCode, errors, StorageErrorCode } from "@fundraise/protocol";

/** The storage service's client-facing failures, one place for codes and wording. */
export const StorageErrors = {
  empty: (field: "file" | "image") =>
    errors.validation(StorageErrorCode.CONTENT_EMPTY, `The ${field} is empty.`, {
      details: [{ path: `/${field}`, message: "must not be empty" }],
    }),
  tooLarge: (field: "file" | "image", max: number) =>
    errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, `The ${field} is larger than ${max} bytes.`, {
      details: [{ path: `/${field}`, message: `must be at most ${max} bytes` }],
    }),
  notFound: (cause?: unknown) =>
    errors.notFound(StorageErrorCode.CONTENT_NOT_FOUND, "The content is not available on IPFS.", { cause }),
  unavailable: (cause?: unknown) =>
    errors.unavailable(ErrorCode.IPFS_UNAVAILABLE, "IPFS is unavailable; try again later.", { cause }),
  timeout: (cause?: unknown) =>
    errors.timeout(StorageErrorCode.IPFS_TIMEOUT, "IPFS did not answer in time; try again later.", { cause }),
};

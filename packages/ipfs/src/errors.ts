import { ErrorCode, errors, StorageErrorCode } from "@fundraise/protocol";

/** Content's client-facing failures, one place for codes and wording (the gateway's and storage's). */
export const ContentErrors = {
  empty: (field: "file" | "image") =>
    errors.validation(StorageErrorCode.CONTENT_EMPTY, `The ${field} is empty.`, {
      details: [{ path: `/${field}`, message: "must not be empty" }],
    }),
  tooLarge: (field: "file" | "image", max: number) =>
    errors.payloadTooLarge(ErrorCode.PAYLOAD_TOO_LARGE, `The ${field} is larger than ${max} bytes.`, {
      details: [{ path: `/${field}`, message: `must be at most ${max} bytes` }],
    }),
  notProjectContent: (cid: string) =>
    errors.validation(
      ErrorCode.VALIDATION_FAILED,
      `${cid} is not a project's content: a directory with a whitepaper entry.`,
    ),
  notFound: (cause?: unknown) =>
    errors.notFound(StorageErrorCode.CONTENT_NOT_FOUND, "The content is not available on IPFS.", { cause }),
  unavailable: (cause?: unknown) =>
    errors.unavailable(ErrorCode.IPFS_UNAVAILABLE, "IPFS is unavailable; try again later.", { cause }),
  timeout: (cause?: unknown) =>
    errors.timeout(StorageErrorCode.IPFS_TIMEOUT, "IPFS did not answer in time; try again later.", { cause }),
};

import { ApiError } from './api-error.ts';

/**
 * A 2xx answer whose body is not the JSON the API serves — a proxy's or captive portal's HTML
 * login page, a truncated body. An API failure, not a bug: the message names the request
 * (`GET /apis/…`), the status and the start of the body. `status` is the HTTP status (2xx).
 * Not retried (the same path answers the same way); the CNI plugin reports it as code 106.
 */
export class DecodeError extends ApiError {
  override readonly name = 'DecodeError';
}

/** True when `error` is a {@link DecodeError} (also across bundles: compares the stable `name`). */
export function isDecodeError(error: unknown): error is DecodeError {
  return error instanceof Error && error.name === 'DecodeError';
}

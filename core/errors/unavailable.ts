/**
 * The datastore cannot be reached or is overloaded: connection refused/reset, timeout, HTTP 429,
 * 5xx. The CNI plugin maps it to CNI error code 11 ("try again later").
 */
export class UnavailableError extends Error {
  override readonly name = 'UnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** True when `error` is a {@link UnavailableError} (also across bundles: compares the stable `name`). */
export function isUnavailable(error: unknown): error is UnavailableError {
  return error instanceof Error && error.name === 'UnavailableError';
}

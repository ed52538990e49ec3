/**
 * The datastore cannot be reached or is overloaded: connection refused/reset, DNS, HTTP 429,
 * 5xx. Transient: the CNI plugin maps it to CNI error code 11 ("try again later"). Refined by
 * RequestTimeoutError (no complete answer in time) and ProxyError (a proxy from the
 * environment refused the tunnel): those carry their own `name` and guard, and
 * {@link isUnavailable} is true for them too.
 */
export class UnavailableError extends Error {
  override readonly name: string = 'UnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The `name`s of UnavailableError and its refinements (guards compare names: bundles may copy classes). */
const UNAVAILABLE_NAMES = new Set(['UnavailableError', 'RequestTimeoutError', 'ProxyError']);

/**
 * True when `error` is an {@link UnavailableError} or one of its refinements
 * (RequestTimeoutError, ProxyError) — also across bundles: compares the stable `name`.
 */
export function isUnavailable(error: unknown): error is UnavailableError {
  return error instanceof Error && UNAVAILABLE_NAMES.has(error.name);
}

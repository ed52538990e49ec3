/**
 * Any other API server failure (401, 403, 405, unexpected status). Not retried. Refined by
 * {@link DecodeError} (a 2xx answer that is not JSON) and TlsError (no TLS session): those
 * carry their own `name` and guard, and {@link isApiError} is true for them too.
 */
export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  /** HTTP status, 0 when no response. */
  readonly status: number;
  /** The Kubernetes Status `reason` of the answer ("Forbidden", "Unauthorized" …), when it gave one. */
  readonly reason?: string;

  constructor(message: string, status: number, options?: { cause?: unknown; reason?: string }) {
    super(message, options);
    this.status = status;
    if (options?.reason) this.reason = options.reason;
  }
}

/** The `name`s of ApiError and its refinements (guards compare names: bundles may copy classes). */
const API_ERROR_NAMES = new Set(['ApiError', 'DecodeError', 'TlsError']);

/**
 * True when `error` is an {@link ApiError} or one of its refinements (DecodeError, TlsError) —
 * also across bundles: compares the stable `name`.
 */
export function isApiError(error: unknown): error is ApiError {
  return error instanceof Error && API_ERROR_NAMES.has(error.name);
}

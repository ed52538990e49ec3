/**
 * Any other API server failure (401, 403, 405, unexpected status or body). Not retried.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** HTTP status, 0 when no response. */
  readonly status: number;

  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** True when `error` is a {@link ApiError} (also across bundles: compares the stable `name`). */
export function isApiError(error: unknown): error is ApiError {
  return error instanceof Error && error.name === 'ApiError';
}

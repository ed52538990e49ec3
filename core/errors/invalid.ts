/**
 * The API server rejected the object (HTTP 422 Invalid, or 400 BadRequest). `message` is the API
 * server's own message, which names the offending field.
 */
export class InvalidError extends Error {
  override readonly name = 'InvalidError';
  /** HTTP status (422 or 400). */
  readonly status: number;
  /** The Kubernetes Status `reason` ("Invalid", "BadRequest" …), when the answer gave one. */
  readonly reason?: string;

  constructor(message: string, status = 422, options?: { reason?: string }) {
    super(message);
    this.status = status;
    if (options?.reason) this.reason = options.reason;
  }
}

/** True when `error` is a {@link InvalidError} (also across bundles: compares the stable `name`). */
export function isInvalid(error: unknown): error is InvalidError {
  return error instanceof Error && error.name === 'InvalidError';
}

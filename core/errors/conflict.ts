/**
 * A compare-and-swap lost: the object changed since it was read (HTTP 409, reason Conflict), or
 * a delete precondition (resourceVersion / uid) did not hold. Re-read and retry.
 */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  /** e.g. "ipamblocks/10-244-3-64-26" */
  readonly object: string;

  constructor(object: string, message = `${object} was modified concurrently`) {
    super(message);
    this.object = object;
  }
}

/** True when `error` is a {@link ConflictError} (also across bundles: compares the stable `name`). */
export function isConflict(error: unknown): error is ConflictError {
  return error instanceof Error && error.name === 'ConflictError';
}

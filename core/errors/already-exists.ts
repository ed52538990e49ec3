/**
 * An object with that name already exists (HTTP 409, reason AlreadyExists). For a block CREATE it
 * means another node won the claim.
 */
export class AlreadyExistsError extends Error {
  override readonly name = 'AlreadyExistsError';
  /** e.g. "ipamblocks/10-244-3-64-26" */
  readonly object: string;

  constructor(object: string, message = `${object} already exists`) {
    super(message);
    this.object = object;
  }
}

/** True when `error` is a {@link AlreadyExistsError} (also across bundles: compares the stable `name`). */
export function isAlreadyExists(error: unknown): error is AlreadyExistsError {
  return error instanceof Error && error.name === 'AlreadyExistsError';
}

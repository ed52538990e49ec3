/**
 * The object does not exist (HTTP 404). Thrown by Datastore update/delete; `get` returns
 * `undefined` instead.
 */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  /** e.g. "ipamblocks/10-244-3-64-26" */
  readonly object: string;

  constructor(object: string, message = `${object} not found`) {
    super(message);
    this.object = object;
  }
}

/** True when `error` is a {@link NotFoundError} (also across bundles: compares the stable `name`). */
export function isNotFound(error: unknown): error is NotFoundError {
  return error instanceof Error && error.name === 'NotFoundError';
}

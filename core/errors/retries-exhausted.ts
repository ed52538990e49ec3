/**
 * Compare-and-swap kept losing: the bounded conflict retries of the allocator ran out. Transient;
 * the CNI plugin maps it to code 11 ("try again later").
 */
export class RetriesExhaustedError extends Error {
  override readonly name = 'RetriesExhaustedError';
  /** How many attempts were made. */
  readonly attempts: number;

  constructor(message: string, attempts: number) {
    super(message);
    this.attempts = attempts;
  }
}

/** True when `error` is a {@link RetriesExhaustedError} (also across bundles: compares the stable `name`). */
export function isRetriesExhausted(error: unknown): error is RetriesExhaustedError {
  return error instanceof Error && error.name === 'RetriesExhaustedError';
}

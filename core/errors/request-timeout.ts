import { UnavailableError } from './unavailable.ts';

/**
 * No complete answer within the transport's `timeoutMs` — connect, TLS handshake, headers and
 * body under one deadline (a server trickling bytes is cut off too). Transient, an
 * UnavailableError (isUnavailable holds; CNI code 11). Not the caller's own AbortSignal: an
 * abort rejects with the signal's reason.
 */
export class RequestTimeoutError extends UnavailableError {
  override readonly name = 'RequestTimeoutError';
  /** The deadline that expired, ms. */
  readonly timeoutMs: number;

  constructor(message: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.timeoutMs = timeoutMs;
  }
}

/** True when `error` is a {@link RequestTimeoutError} (also across bundles: compares the stable `name`). */
export function isRequestTimeout(error: unknown): error is RequestTimeoutError {
  return error instanceof Error && error.name === 'RequestTimeoutError';
}

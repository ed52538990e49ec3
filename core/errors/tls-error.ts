import { ApiError } from './api-error.ts';

/**
 * No TLS session with the API server. `origin` says whose side failed:
 * - `kubeconfig`: our own TLS material cannot be used (a CA, client certificate or key that is
 *   not PEM, does not parse, or a key that is not the certificate's) — the message names the item;
 * - `server`: the server's certificate is not trusted (unknown CA, self-signed, expired, wrong
 *   name) or the handshake failed.
 * Not transient (retrying does not fix a certificate): an ApiError with status 0 (isApiError
 * holds); the CNI plugin reports it as code 105.
 */
export class TlsError extends ApiError {
  override readonly name = 'TlsError';
  readonly origin: 'kubeconfig' | 'server';

  constructor(message: string, origin: 'kubeconfig' | 'server', options?: { cause?: unknown }) {
    super(message, 0, options);
    this.origin = origin;
  }
}

/** True when `error` is a {@link TlsError} (also across bundles: compares the stable `name`). */
export function isTlsError(error: unknown): error is TlsError {
  return error instanceof Error && error.name === 'TlsError';
}

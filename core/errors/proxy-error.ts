import { UnavailableError } from './unavailable.ts';

/**
 * A proxy named by the environment (HTTPS_PROXY, as client-go honours it) refused or could not
 * open the tunnel to the API server (e.g. 407, or the proxy itself unreachable). The message
 * names the proxy (never its credentials) and the variable. Treated as transient, an
 * UnavailableError (isUnavailable holds; CNI code 11): proxies come back, and the runtime retries.
 */
export class ProxyError extends UnavailableError {
  override readonly name = 'ProxyError';
}

/** True when `error` is a {@link ProxyError} (also across bundles: compares the stable `name`). */
export function isProxyError(error: unknown): error is ProxyError {
  return error instanceof Error && error.name === 'ProxyError';
}

/**
 * The direct path's API failures as CNI errors (the agent path gets them as error kinds on the
 * wire: agent-client.ts). Loaded only with the direct path: it evaluates core's error classes.
 */
import { isApiError, isDecodeError, isInvalid, isTlsError } from 'blockipam/core';
import { CniCode, CniError } from '../cni/errors.ts';

/**
 * Maps an API failure that is neither transient nor expected to a documented code, or undefined,
 * on core's error kinds (not their messages): 401/403 and a TlsError are 105 (not 11: retrying
 * does not fix credentials or a certificate); a leftover 422/400 (InvalidError) is 106 with the
 * server's message shortened (it can echo huge inputs), and so is a 2xx answer that is not JSON
 * (DecodeError).
 */
export function apiFailure(e: unknown): CniError | undefined {
  if (!(e instanceof Error)) return undefined;
  const msg = e.message.length > 300 ? `${e.message.slice(0, 300)}… (${e.message.length} chars)` : e.message;
  if (isTlsError(e))
    // origin kubeconfig: our own TLS material unusable (the message names the item); server: the
    // server's certificate not trusted.
    return new CniError(
      CniCode.authFailed,
      'API server refused our credentials or TLS',
      e.origin === 'kubeconfig'
        ? msg
        : `TLS: the API server's certificate is not trusted (check the kubeconfig's certificate-authority-data and server name): ${msg}`,
    );
  if (isApiError(e) && (e.status === 401 || e.status === 403)) {
    const what = e.status === 401 ? 'credentials not accepted (HTTP 401)' : 'permission denied (HTTP 403)';
    return new CniError(
      CniCode.authFailed,
      'API server refused our credentials or TLS',
      `${what}: check the kubeconfig's user and its RBAC: ${msg}`,
    );
  }
  if (isDecodeError(e)) return new CniError(CniCode.apiRejected, 'API server answer is not JSON', msg);
  if (isInvalid(e)) {
    return new CniError(CniCode.apiRejected, 'API server rejected the request as invalid', msg);
  }
  return undefined;
}

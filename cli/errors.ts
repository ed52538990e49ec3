/**
 * Turns a failure into one clear line on stderr and exit code 2 (ERROR). Expected failures get a
 * sentence saying what to do; anything else is shown with its name so it can be reported.
 */
import { isApiError, isConflict, isInvalid, isNotFound, isTlsError, isUnavailable } from 'blockipam/core';
import { isKubeconfigError } from 'blockipam/core/kube';
import { EXIT, isCliError, println } from './io.ts';
import type { ExitCode, TextOut } from './io.ts';

/** Prints `error` for an operator and returns the exit code. */
export function reportFailure(stderr: TextOut, error: unknown): ExitCode {
  println(stderr, `ipamctl: ${describeFailure(error)}`);
  return EXIT.ERROR;
}

/** The operator-facing text of a failure. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (isCliError(error) || isKubeconfigError(error)) return message;
  if (isUnavailable(error)) return `cannot reach the Kubernetes API server (${message}); nothing was changed`;
  // A LIST of a kind the API server does not serve answers 404 "page not found".
  if (isNotFound(error) && /ipam\.blockipam\.io/.test(`${error.object} ${message}`)) {
    return `the blockipam CRDs are not installed in this cluster (kubectl apply -f crds/): ${error.object}: ${message}`;
  }
  if (isApiError(error) && (error.status === 401 || error.status === 403))
    return `the API server refused the request: ${message}`;
  if (isConflict(error))
    return `an object changed while ipamctl was writing it; nothing more was done: ${message}`;
  // kube-apiserver answers an http:// request on its TLS port with 400 and this body
  if (isInvalid(error) && /HTTP request to an HTTPS server/i.test(message))
    return `the kubeconfig's server is http:// but the API server speaks HTTPS: write https:// (${message})`;
  if (isInvalid(error)) return `the API server rejected the object: ${message}`;
  if (isTlsError(error))
    return error.origin === 'server'
      ? `no TLS session with the API server: ${message} (check the kubeconfig's certificate-authority for this cluster)`
      : `the kubeconfig's TLS material cannot be used: ${message}`;
  return error instanceof Error ? `${error.name}: ${message}` : message;
}

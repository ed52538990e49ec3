/**
 * One rule for what a failed node IPAM operation is, on the wire (protocol.ts
 * {@link NodeIpamErrorKind}): the agent answers with it, and the plugin maps the kind to a CNI code
 * (docs/design-plugin.md §Errors). Decided on core's error kinds, never on messages.
 */
import { isApiError } from '../errors/api-error.ts';
import { isDecodeError } from '../errors/decode-error.ts';
import { isInvalid } from '../errors/invalid.ts';
import { isRetriesExhausted } from '../errors/retries-exhausted.ts';
import { isTlsError } from '../errors/tls-error.ts';
import { isUnavailable } from '../errors/unavailable.ts';
import type { NodeIpamErrorKind } from './protocol.ts';

/**
 * The kind of a thrown failure: the API server unreachable or 5xx, or compare-and-swap that kept
 * losing → `unavailable`; the caller's budget (TimeoutError / AbortError) → `timeout`; 401, 403
 * or TLS → `auth`; 422/400 or a non-JSON 2xx answer → `apiRejected`; anything else → `internal`.
 */
export function errorKindOf(e: unknown): NodeIpamErrorKind {
  if (isUnavailable(e) || isRetriesExhausted(e)) return 'unavailable';
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')) return 'timeout';
  if (isTlsError(e) || (isApiError(e) && (e.status === 401 || e.status === 403))) return 'auth';
  if (isDecodeError(e) || isInvalid(e)) return 'apiRejected';
  return 'internal';
}

/**
 * One rule for what a failed node IPAM operation is, on the wire (protocol.ts
 * {@link NodeIpamErrorKind}): the agent answers with it, and the plugin maps the kind to a CNI code
 * (docs/design-plugin.md §Errors). Decided on core's error kinds, never on messages — but for the
 * admission policy's name, which core's apiRefusalOf reads from the API server's own words.
 */
import { apiRefusalOf } from '../errors/api-refusal.ts';
import { boundMessage } from '../errors/bounded-message.ts';
import { isRetriesExhausted } from '../errors/retries-exhausted.ts';
import { isUnavailable } from '../errors/unavailable.ts';
import type { NodeIpamErrorKind } from './service-types.ts';

/**
 * The kind of a thrown failure: the API server unreachable or 5xx, or compare-and-swap that kept
 * losing → `unavailable`; the caller's budget (TimeoutError / AbortError) → `timeout`; an
 * admission policy's denial → `admission`; 403 from RBAC → `forbidden`; 401 or TLS → `auth`;
 * 422/400 or a non-JSON 2xx answer → `apiRejected` (core's apiRefusalOf); anything else →
 * `internal`.
 */
export function errorKindOf(e: unknown): NodeIpamErrorKind {
  return nodeIpamErrorOf(e).kind;
}

/**
 * The error the agent answers for a thrown failure: {@link errorKindOf}'s kind, and a message
 * that carries the API server's refusal whole — labelled as apiRefusalOf labels it (the status,
 * the reason, the policy, what to check) and bounded by boundMessage, never cut before it names
 * the field, node, pool or block. Pure; never throws.
 */
export function nodeIpamErrorOf(e: unknown): { kind: NodeIpamErrorKind; message: string } {
  const text = (): string => boundMessage(e instanceof Error ? e.message : String(e));
  if (isUnavailable(e) || isRetriesExhausted(e)) return { kind: 'unavailable', message: text() };
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError'))
    return { kind: 'timeout', message: text() };
  const refusal = apiRefusalOf(e);
  if (refusal) return { kind: refusal.kind, message: refusal.message };
  return { kind: 'internal', message: text() };
}

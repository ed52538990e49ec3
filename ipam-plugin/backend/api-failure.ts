/**
 * The direct path's API failures as CNI errors (the agent maps its own in
 * block-controller/agent/ipam/cni-call.ts). Loaded only with the direct path: it evaluates core's
 * error classes.
 */
import { apiRefusalOf } from 'blockipam/core';
import { errorOfKind, type CniError } from 'blockipam/core/cni/errors';

/**
 * Maps an API failure that is neither transient nor expected to a documented code, or undefined,
 * by core's apiRefusalOf — the rule the agent answers by, so a refusal reads the same on both
 * paths: an admission policy's denial is 107 naming the policy, RBAC's 403 and 401 / TLS are 105
 * (not 11: retrying does not fix credentials or a certificate), a leftover 422/400 and a 2xx
 * answer that is not JSON are 106. The details carry the API server's message whole, bounded by
 * core's boundMessage (the part naming the field, node, pool or block is never cut).
 */
export function apiFailure(e: unknown): CniError | undefined {
  const refusal = apiRefusalOf(e);
  return refusal ? errorOfKind(refusal.kind, refusal.message) : undefined;
}

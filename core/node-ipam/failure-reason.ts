/**
 * One rule for why an ADD failed, in the bounded set of protocol.ts {@link AddFailureReason}:
 * from core's allocator outcome (AssignFailure), from an answered ADD outcome, or from an error
 * answer's kind. The agent counts failed ADDs by it; nothing else reads it.
 */
import type { AssignFailure } from '../allocator/types.ts';
import type { AddFailureReason, AddOutcome, NodeIpamErrorKind } from './service-types.ts';

/** How an ADD of the node IPAM service ended: its outcome, or the kind of its failure. */
export type AddAnswer = { readonly outcome: AddOutcome } | { readonly errorKind: NodeIpamErrorKind };

const BY_ASSIGN_FAILURE: Readonly<Record<AssignFailure, AddFailureReason>> = {
  Exhausted: 'pool_exhausted',
  BlockLimit: 'node_block_limit',
  NoPool: 'no_matching_pool',
  PoolRefused: 'no_matching_pool',
  PoolDisabled: 'pool_disabled',
  Taken: 'ip_taken',
  NotInPool: 'ip_refused',
  Reserved: 'ip_refused',
  NotAllowed: 'ip_refused',
  HandleInUse: 'duplicate',
};

/** The reason of an allocator failure. */
export function assignFailureReason(reason: AssignFailure): AddFailureReason {
  return BY_ASSIGN_FAILURE[reason];
}

/**
 * An outcome without `reason`, by its kind alone: the service's own refusals before core's
 * allocator runs (a malformed annotation, a pod on another node), or an older agent's answer.
 */
const BY_KIND: Readonly<Record<Exclude<AddOutcome['kind'], 'allocated'>, AddFailureReason>> = {
  duplicate: 'duplicate',
  exhausted: 'pool_exhausted',
  addressRefused: 'ip_refused',
  rejected: 'other',
  misconfigured: 'other',
};

const BY_ERROR: Readonly<Record<NodeIpamErrorKind, AddFailureReason>> = {
  notReady: 'not_ready',
  unavailable: 'api_unreachable',
  timeout: 'api_unreachable',
  auth: 'refused',
  forbidden: 'refused',
  admission: 'refused',
  apiRejected: 'refused',
  badRequest: 'other',
  misconfigured: 'other',
  internal: 'other',
};

/**
 * Why an answered ADD failed: the outcome's `reason` (else its kind), or the error's kind.
 * @returns undefined when the ADD allocated
 */
export function addFailureReasonOf(answer: AddAnswer): AddFailureReason | undefined {
  if ('errorKind' in answer) return BY_ERROR[answer.errorKind] ?? 'other';
  const o = answer.outcome;
  if (o.kind === 'allocated') return undefined;
  return o.reason ?? BY_KIND[o.kind] ?? 'other';
}

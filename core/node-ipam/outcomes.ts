/**
 * Core's allocator results in the protocol's terms (protocol.ts): the one mapping of an
 * AssignOutcome to an ADD outcome and of a GcResult to a GC outcome, with the messages the CNI
 * plugin prints (docs/design-core.md §Node IPAM service).
 */
import type { GcResult } from '../allocator/gc.ts';
import type { AssignedAddress, AssignOutcome } from '../allocator/types.ts';
import { assignFailureReason } from './failure-reason.ts';
import type { AddOutcome, GcOutcome, IpConfig } from './service-types.ts';

/** The assigned addresses as CNI IP configurations: block prefix and gateway, IPv4 first. */
function toIpConfigs(o: Extract<AssignOutcome, { ok: true }>): IpConfig[] {
  return [o.ipv4, o.ipv6]
    .filter((a): a is AssignedAddress => a !== undefined)
    .map((a) => ({ address: `${a.address}/${a.prefixLength}`, gateway: a.gateway }));
}

/**
 * HandleInUse → `duplicate`; NoPool, Exhausted, BlockLimit → `exhausted`; PoolRefused,
 * PoolDisabled → `rejected`; a refused static address (Taken, NotInPool, Reserved, NotAllowed) →
 * `addressRefused` with the reason before core's message ("Taken: …"). Each carries core's text
 * unchanged (failure-text.ts: pools, reason, next step) and its bounded `reason`
 * (failure-reason.ts).
 */
export function toAddOutcome(o: AssignOutcome): AddOutcome {
  if (o.ok) return { kind: 'allocated', ips: toIpConfigs(o) };
  const reason = assignFailureReason(o.reason);
  switch (o.reason) {
    case 'HandleInUse':
      return { kind: 'duplicate', message: o.message, reason };
    case 'NoPool':
    case 'Exhausted':
    case 'BlockLimit':
      return { kind: 'exhausted', message: o.message, reason };
    case 'PoolRefused':
    case 'PoolDisabled':
      return { kind: 'rejected', message: o.message, reason };
    default:
      return { kind: 'addressRefused', message: `${o.reason}: ${o.message}`, reason };
  }
}

/**
 * GC's outcome: each released handle once; each item core could not release (its `failed`) as
 * `<handle> (<address>): <error>`; each kept because its pod is alive elsewhere as
 * `<handle> (<address>: pod <namespace>/<name>)`.
 */
export function toGcOutcome(r: GcResult): GcOutcome {
  return {
    released: [...new Set(r.released.map((a) => a.allocation.handle))],
    errors: r.failed.map((f) => `${f.item.handle} (${f.item.address}): ${f.error.message}`),
    aliveElsewhere: r.aliveElsewhere.map(
      (a) =>
        `${a.allocation.handle} (${a.address}: pod ${a.allocation.namespace ?? ''}/${a.allocation.pod ?? ''})`,
    ),
  };
}

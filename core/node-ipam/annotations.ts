/**
 * Parsing the pod and namespace annotations that steer an allocation (docs/design-core.md §2;
 * their names are in core/annotations.ts). The node IPAM service (service.ts) reads them for an
 * ADD, on the agent and on the plugin's direct path alike:
 * - `ipam.blockipam.io/ippools`: JSON list of pool names or CIDRs. On the namespace it is the
 *   default for its pods; on the pod it overrides the namespace's. The pools must still admit
 *   the namespace (namespaceSelector) and node (nodeSelector) — core enforces it.
 * - `ipam.blockipam.io/ip-addrs`: JSON list of static addresses for the pod, at most one per
 *   family, each a bare address: one with a prefix length ("10.244.0.5/26") is refused, as
 *   Calico's `cni.projectcalico.org/ipAddrs` refuses it (its net.ParseIP). Used only when the
 *   invocation itself names none (runtimeConfig.ips, args.cni.ips, CNI_ARGS IP= come first; those
 *   follow the CNI `ips` convention, CIDR notation, and their prefix lengths are ignored).
 */
import { parseIP } from '../address/ip.ts';
import { IP_ADDRS_ANNOTATION, POOLS_ANNOTATION } from '../annotations.ts';
import type { AllocationAnnotations } from '../annotations.ts';

export interface AnnotationChoice {
  /** Requested pools (pod's, else namespace's); empty = automatic. */
  readonly pools: readonly string[];
  /**
   * Where `pools` came from (`pod annotation ipam.blockipam.io/ippools` or the namespace's), for
   * a message refusing one of them; absent when `pools` is empty.
   */
  readonly poolsFrom?: string;
  /** Static addresses from the pod; empty = none. */
  readonly ips: readonly string[];
}

/** Typed on core's set: reading a name outside it does not compile. */
type Annotations = AllocationAnnotations | undefined;

/**
 * Reads the two annotations.
 * @returns the choice, or a message naming the annotation and object when one is malformed
 */
export function readAnnotations(
  pod: Annotations,
  namespace: Annotations,
): AnnotationChoice | { readonly problem: string } {
  const podPools = stringList(pod?.[POOLS_ANNOTATION]);
  const nsPools = stringList(namespace?.[POOLS_ANNOTATION]);
  const ips = stringList(pod?.[IP_ADDRS_ANNOTATION]);
  if (podPools === 'bad')
    return { problem: `pod annotation ${POOLS_ANNOTATION} is not a JSON list of strings` };
  if (nsPools === 'bad')
    return { problem: `namespace annotation ${POOLS_ANNOTATION} is not a JSON list of strings` };
  if (ips === 'bad')
    return { problem: `pod annotation ${IP_ADDRS_ANNOTATION} is not a JSON list of strings` };
  const bad = ips.find((t) => parseIP(t) === undefined);
  if (bad !== undefined)
    return {
      problem: `pod annotation ${IP_ADDRS_ANNOTATION}: ${JSON.stringify(bad)} is not an IP address${bad.includes('/') ? ' (write the bare address, without a prefix length)' : ''}`,
    };
  const families = ips.map((t) => parseIP(t)?.family);
  if (new Set(families).size !== families.length)
    return { problem: `pod annotation ${IP_ADDRS_ANNOTATION} names two addresses of one family` };
  const on = podPools.length > 0 ? 'pod' : nsPools.length > 0 ? 'namespace' : undefined;
  return {
    pools: on === 'pod' ? podPools : nsPools,
    ...(on ? { poolsFrom: `${on} annotation ${POOLS_ANNOTATION}` } : {}),
    ips,
  };
}

function stringList(text: string | undefined): string[] | 'bad' {
  if (text === undefined || text.trim() === '') return [];
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : 'bad';
  } catch {
    return 'bad';
  }
}

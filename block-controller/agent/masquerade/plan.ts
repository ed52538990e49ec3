/**
 * The masquerade planner (docs/design-agent.md §Masquerade): a pure function from every IPPool
 * and the operator's non-masquerade CIDRs to the address sets the node's masquerade rule reads.
 * A packet is masqueraded (its source rewritten to the node's address on the way out) when its
 * source lies in `sources` and its destination in none of `exempt` — so traffic leaving the pod
 * network is answered to the node, while pod-to-pod traffic (any pool to any pool, across nodes
 * too) and traffic to the non-masquerade CIDRs (the node network, peered networks) keep the pod's
 * source address. The same rule as ip-masq-agent's and kindnet's, with the pools as the pod range.
 *
 * Every pool counts, disabled ones included (their blocks still hold pods), whatever its
 * selectors: a pool's addresses are pod addresses on whichever node holds them.
 */
import { cidrCovers, formatCidr, parseCidr } from 'blockipam/core';
import type { Cidr, IPFamily, IPPool } from 'blockipam/core';

/** The two sets of one address family: canonical CIDR text, sorted, none inside another. */
interface MasqueradeSets {
  /** The pools' CIDRs: traffic from these is masqueraded unless it goes to `exempt`. */
  readonly sources: readonly string[];
  /** The pools' CIDRs and the non-masquerade CIDRs: destinations that keep the pod source. */
  readonly exempt: readonly string[];
}

export interface MasqueradePlan {
  /** Per family; a family without a pool has empty sets (its rule is left out). */
  readonly 4: MasqueradeSets;
  readonly 6: MasqueradeSets;
  /** Pools whose `spec.cidr` is no CIDR (the CRD refuses them; a hand-made object could not). */
  readonly skipped: readonly { readonly pool: string; readonly cidr: string }[];
}

/**
 * Plans the sets from `pools` (every IPPool) and `nonMasquerade` (the operator's list, validated
 * at the edge: `--non-masquerade-cidr`). Each set is reduced to its outermost CIDRs (a CIDR
 * inside another of the same set is dropped): the kernel's interval sets refuse overlapping
 * elements, and the match is the same. Pure; never throws.
 */
export function planMasquerade(pools: readonly IPPool[], nonMasquerade: readonly Cidr[]): MasqueradePlan {
  const sources: Cidr[] = [];
  const skipped: { pool: string; cidr: string }[] = [];
  for (const pool of pools) {
    const cidr = parseCidr(pool.spec.cidr);
    if (cidr) sources.push(cidr);
    else skipped.push({ pool: pool.metadata.name, cidr: pool.spec.cidr });
  }
  const sets = (family: IPFamily): MasqueradeSets => {
    const own = sources.filter((c) => c.family === family);
    if (own.length === 0) return { sources: [], exempt: [] };
    return {
      sources: outermost(own).map(formatCidr),
      exempt: outermost([...own, ...nonMasquerade.filter((c) => c.family === family)]).map(formatCidr),
    };
  };
  return { 4: sets(4), 6: sets(6), skipped };
}

/**
 * The CIDRs of `cidrs` that no other one covers, sorted by address (one family). Two CIDRs
 * either nest or are disjoint, so after sorting by base (the wider first at equal base) a CIDR
 * covered by any kept one is covered by the last kept one.
 */
export function outermost(cidrs: readonly Cidr[]): Cidr[] {
  const sorted = [...cidrs].sort((a, b) =>
    a.base !== b.base ? (a.base < b.base ? -1 : 1) : a.prefixLength - b.prefixLength,
  );
  const kept: Cidr[] = [];
  for (const cidr of sorted) {
    const last = kept[kept.length - 1];
    if (!last || !cidrCovers(last, cidr)) kept.push(cidr);
  }
  return kept;
}

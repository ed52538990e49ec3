/**
 * The pool list the admission policy checks a node's claim against (docs/install.md "Security",
 * docs/design-controller.md "Claimable pools"). A ValidatingAdmissionPolicy sees one object and
 * its parameter, never the other IPPools; so the controller publishes every pool in one
 * ConfigMap that the policy takes as its parameter, and a node credential may CREATE a block
 * only inside a pool listed `usable` there, of that pool's block size, overlapping no other
 * listed pool. Blocks of one pool and one size cannot overlap (the name is derived from the
 * CIDR), so with these rules a claim can never overlap another node's block.
 *
 * Encoding (the policy's CEL splits it on spaces): data key = pool name (object names are valid
 * ConfigMap keys), value = `<cidr> <blockSize> <state>`, e.g. `10.244.0.0/16 26 usable`.
 */
import { parseCidr } from '../address/ip.ts';
import type { IPPool } from '../resources.ts';
import { isPodCIDRPool, poolBlockSize, usablePools } from './pools.ts';

/**
 * A pool's state for claims: `usable` (claims allowed), `podcidr` (usable, but its blocks are the
 * nodes' podCIDRs, which only the controller creates: pools.ts isPodCIDRPool), `disabled`
 * (spec.disabled), `deleting` (deletionTimestamp set), `shadowed` (overlaps an older pool: core
 * never allocates from it).
 */
type ClaimPoolState = 'usable' | 'podcidr' | 'disabled' | 'deleting' | 'shadowed';

/**
 * The ConfigMap `data` for `pools`: one entry per pool with a parsable CIDR (a pool the API
 * server stored with another CIDR text cannot exist: the CRD requires strictly masked CIDRs).
 * Pure; the same pools give the same data.
 */
export function claimPoolsData(pools: readonly IPPool[]): Record<string, string> {
  const { usable, shadowed } = usablePools(pools);
  const usableNames = new Set(usable.map((p) => p.metadata.name));
  const shadowedNames = new Set(shadowed.map((s) => s.pool));
  const data: Record<string, string> = {};
  for (const pool of [...pools].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    if (!parseCidr(pool.spec.cidr)) continue;
    const name = pool.metadata.name;
    const state: ClaimPoolState = usableNames.has(name)
      ? isPodCIDRPool(pool)
        ? 'podcidr'
        : 'usable'
      : shadowedNames.has(name)
        ? 'shadowed'
        : pool.metadata.deletionTimestamp
          ? 'deleting'
          : 'disabled';
    data[name] = `${pool.spec.cidr} ${poolBlockSize(pool)} ${state}`;
  }
  return data;
}

/** True when two ConfigMap data maps hold the same entries. */
export function sameClaimPoolsData(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>>,
): boolean {
  const left = a ?? {};
  const keys = Object.keys(b);
  return Object.keys(left).length === keys.length && keys.every((k) => left[k] === b[k]);
}

/**
 * Labels on IPAMBlock objects: how blocks are found without scanning (Kubernetes has no key-prefix
 * queries). Always recomputed from the spec by {@link blockLabels}, so they cannot drift.
 *
 * - `ipam.blockipam.io/pool`: pool name (pool names are ≤ 63 characters, CRD rule);
 * - `ipam.blockipam.io/ip-family`: "4" | "6";
 * - `ipam.blockipam.io/region`: the block name of the enclosing region (/16 for IPv4, /112 for
 *   IPv6; every allowed block lies inside one region), so a claim LISTs one region, not the family;
 * - `node.ipam.blockipam.io/<nodeKey>`: "affine" for the block's affinity node, "borrowed" for every
 *   other node holding an allocation in it. One LIST `node.ipam.blockipam.io/<k>=affine` finds a
 *   node's blocks; one LIST with the key alone finds every block holding its addresses.
 */
import { createHash } from 'node:crypto';
import { blockNameOf } from '../address/block-cidr.ts';
import { bitsOf, mustParseCidr } from '../address/ip.ts';
import type { Cidr, IPFamily } from '../address/ip.ts';
import type { IPAMBlockSpec, LabelSelector } from '../resources.ts';

export const POOL_LABEL = 'ipam.blockipam.io/pool';
const FAMILY_LABEL = 'ipam.blockipam.io/ip-family';
export const REGION_LABEL = 'ipam.blockipam.io/region';

/**
 * Region prefix per family: larger than any block (/20, /116), small enough that one region holds
 * at most 1,024 blocks of the default size (/26 in a /16; /122 in a /112).
 */
export const REGION_PREFIX: Readonly<Record<IPFamily, number>> = { 4: 16, 6: 112 };

/** The region enclosing `cidr` (a block or any CIDR at least as long as the region prefix). */
export function regionOf(cidr: Cidr): Cidr {
  const prefixLength = REGION_PREFIX[cidr.family];
  const hostBits = BigInt(bitsOf(cidr.family) - prefixLength);
  return { family: cidr.family, base: (cidr.base >> hostBits) << hostBits, prefixLength };
}
const NODE_LABEL_PREFIX = 'node.ipam.blockipam.io/';

/**
 * A node name as a label-key name part: 40 hex characters of SHA-256 (node names may be 253
 * characters; a label key name is at most 63).
 */
function nodeKey(node: string): string {
  return createHash('sha256').update(node).digest('hex').slice(0, 40);
}

/** True for a node label key (`node.ipam.blockipam.io/<nodeKey>`). */
export function isNodeLabel(key: string): boolean {
  return key.startsWith(NODE_LABEL_PREFIX);
}

/** The label key that ties a block to `node`. */
export function nodeLabel(node: string): string {
  return NODE_LABEL_PREFIX + nodeKey(node);
}

/** The full label set of a block with this spec in pool `pool`. */
export function blockLabels(spec: IPAMBlockSpec, pool: string, family: IPFamily): Record<string, string> {
  return labelsOf(spec, pool, { ...mustParseCidr(spec.cidr), family });
}

/** {@link blockLabels} with the spec's CIDR already parsed (a parse costs more than the rest). */
export function labelsOf(spec: IPAMBlockSpec, pool: string, cidr: Cidr): Record<string, string> {
  const labels: Record<string, string> = {
    [POOL_LABEL]: pool,
    [FAMILY_LABEL]: String(cidr.family),
    [REGION_LABEL]: blockNameOf(regionOf(cidr)),
  };
  for (const allocation of Object.values(spec.allocations)) {
    if (allocation.node !== spec.affinity) labels[nodeLabel(allocation.node)] = 'borrowed';
  }
  if (spec.affinity !== null) labels[nodeLabel(spec.affinity)] = 'affine';
  return labels;
}

/**
 * The labels a block should carry after a spec change: labels set by others are kept, the pool,
 * family and node labels are recomputed.
 */
export function relabel(
  existing: Readonly<Record<string, string>> | undefined,
  spec: IPAMBlockSpec,
  pool: string,
  family: IPFamily,
): Record<string, string> {
  const kept = Object.entries(existing ?? {}).filter(([key]) => !isNodeLabel(key));
  return { ...Object.fromEntries(kept), ...blockLabels(spec, pool, family) };
}

/** Selects the blocks affine to `node` (optionally of one family). */
export function affineSelector(node: string, family?: IPFamily): LabelSelector {
  return {
    matchLabels: { [nodeLabel(node)]: 'affine', ...(family ? { [FAMILY_LABEL]: String(family) } : {}) },
  };
}

/** Selects every block holding anything of `node`: affine, or with borrowed addresses. */
export function nodeBlocksSelector(node: string): LabelSelector {
  return { matchExpressions: [{ key: nodeLabel(node), operator: 'Exists' }] };
}

/** Selects the blocks of one region (see {@link regionOf}). */
export function regionSelector(region: Cidr): LabelSelector {
  return { matchLabels: { [REGION_LABEL]: blockNameOf(region) } };
}

/** Selects the blocks of one family (and pool, when given). */
export function familySelector(family: IPFamily, pool?: string): LabelSelector {
  return { matchLabels: { [FAMILY_LABEL]: String(family), ...(pool ? { [POOL_LABEL]: pool } : {}) } };
}

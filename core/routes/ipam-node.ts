/**
 * The IPAMNode rule (docs/design-controller.md §IPAMNode): from every IPAMBlock, IPPool and Node,
 * what every other node needs to route to each node — its InternalIPs, its trusted affine blocks,
 * its addresses in other blocks. Pure; the cluster controller writes the result, every agent's
 * route planner reads it, so no node daemon needs the whole cluster's blocks.
 *
 * A block gives routes only if core's {@link classifyBlocks} trusts it (judged over all blocks
 * and pools: a block a node forged never gets a route) and it holds no node's address (any type
 * in a Node's `status.addresses`): such a block is reported as `covers-node-address` (a route for
 * it would take the nodes' own network off the cluster's). A borrowed address in a block of a
 * podCIDR pool (allocator/pools.ts isPodCIDRPool) gets no /32: core never borrows there, and the
 * podCIDR's addresses may still be host-local's on its node — a node credential adding its own
 * allocation there must not take that pod's traffic.
 */
import { classifyBlocks } from '../allocator/block-trust.ts';
import { isPodCIDRPool } from '../allocator/pools.ts';
import { POOL_LABEL } from '../block/labels.ts';
import type { IgnoredBlock } from '../allocator/block-trust.ts';
import { addressTextAt, blockOrdinals, reservedOrdinals } from '../address/block-cidr.ts';
import { bitsOf, cidrContains, formatCidr, formatIP, mustParseCidr, parseIP } from '../address/ip.ts';
import type { Cidr, IP, IPFamily } from '../address/ip.ts';
import type { IPAMBlock, IPAMNodeSpec, IPPool, ObjectMeta } from '../resources.ts';

/** The fields of a Kubernetes Node the rule reads (structurally a client-node V1Node). */
export interface AddressedNode {
  readonly metadata: Pick<ObjectMeta, 'name'>;
  readonly status?: { readonly addresses?: readonly { readonly type: string; readonly address: string }[] };
}

/** A trusted block that still gets no route because a node's address lies inside it. */
export interface UnroutedBlock {
  readonly block: IPAMBlock;
  readonly reason: 'covers-node-address';
  /** The node whose address it holds. */
  readonly node: string;
}

export interface IPAMNodePlan {
  /** One spec per Node, by name (every Node gets one, possibly with empty lists). */
  readonly specs: ReadonlyMap<string, IPAMNodeSpec>;
  /** Blocks core does not trust (classifyBlocks' verdicts), in input order. */
  readonly ignored: readonly IgnoredBlock[];
  /** Trusted blocks that hold a node's address, in input order. */
  readonly unrouted: readonly UnroutedBlock[];
}

/** Plans every Node's IPAMNode spec (rules in the module comment). Pure; never throws. */
export function planIPAMNodes(
  blocks: readonly IPAMBlock[],
  pools: readonly IPPool[],
  nodes: readonly AddressedNode[],
): IPAMNodePlan {
  const specs = new Map<string, { addresses: string[]; blocks: string[]; borrowed: string[] }>();
  const addresses: { node: string; ip: IP }[] = [];
  for (const node of nodes) {
    specs.set(node.metadata.name, { addresses: internalIPs(node), blocks: [], borrowed: [] });
    for (const a of node.status?.addresses ?? []) {
      const ip = parseIP(a.address);
      if (ip) addresses.push({ node: node.metadata.name, ip });
    }
  }
  const { trusted, ignored } = classifyBlocks(blocks, pools);
  const podCIDRPools = new Set(pools.filter(isPodCIDRPool).map((p) => p.metadata.name));
  const unrouted: UnroutedBlock[] = [];
  for (const block of trusted) {
    const cidr = mustParseCidr(block.spec.cidr); // trusted: a masked CIDR
    const covered = addresses.find((a) => cidrContains(cidr, a.ip));
    if (covered) {
      unrouted.push({ block, reason: 'covers-node-address', node: covered.node });
      continue;
    }
    const affinity = block.spec.affinity;
    if (affinity !== null) specs.get(affinity)?.blocks.push(formatCidr(cidr));
    if (podCIDRPools.has(block.metadata.labels?.[POOL_LABEL] ?? '')) continue;
    // only canonical, assignable ordinals: a key outside the block (or reserved) names another
    // block's address, and a /32 to it would take that address's traffic
    for (const [ordinal, allocation] of Object.entries(block.spec.allocations))
      if (
        allocation.node !== affinity &&
        /^(0|[1-9][0-9]*)$/.test(ordinal) &&
        assignable(cidr, Number(ordinal))
      )
        specs.get(allocation.node)?.borrowed.push(hostCidr(cidr, Number(ordinal)));
  }
  for (const spec of specs.values()) {
    spec.blocks.sort(byAddress);
    spec.borrowed = [...new Set(spec.borrowed)].sort(byAddress);
  }
  return { specs, ignored, unrouted };
}

/**
 * True when two specs route the same (lists compared in order: planIPAMNodes sorts them;
 * `updatedAt` ignored).
 */
export function sameIPAMNodeSpec(a: IPAMNodeSpec | undefined, b: IPAMNodeSpec | undefined): boolean {
  if (!a || !b) return a === b;
  const same = (x: readonly string[], y: readonly string[]): boolean =>
    x.length === y.length && x.every((v, i) => v === y[i]);
  return same(a.addresses, b.addresses) && same(a.blocks, b.blocks) && same(a.borrowed, b.borrowed);
}

/**
 * The node's first InternalIP of each family in `status.addresses` (Kubernetes lists the primary
 * address first), canonical text, IPv4 first.
 */
export function internalIPs(node: AddressedNode): string[] {
  const found = new Map<IPFamily, string>();
  for (const a of node.status?.addresses ?? []) {
    if (a.type !== 'InternalIP') continue;
    const ip = parseIP(a.address);
    if (ip && !found.has(ip.family)) found.set(ip.family, formatIP(ip));
  }
  return [4, 6].flatMap((family) => found.get(family as IPFamily) ?? []);
}

/** True when `ordinal` is in the block and not reserved (core's isAssignable, at the address level). */
function assignable(block: Cidr, ordinal: number): boolean {
  return ordinal < blockOrdinals(block) && !reservedOrdinals(block).includes(ordinal);
}

/** "address/32" or "address/128" for the ordinal of a block. */
function hostCidr(block: Cidr, ordinal: number): string {
  return `${addressTextAt(block, ordinal)}/${bitsOf(block.family)}`;
}

/** Orders CIDR text by family, then address, then prefix length (stable for equal text). */
function byAddress(a: string, b: string): number {
  const x = mustParseCidr(a);
  const y = mustParseCidr(b);
  if (x.family !== y.family) return x.family - y.family;
  if (x.base !== y.base) return x.base < y.base ? -1 : 1;
  return x.prefixLength - y.prefixLength;
}

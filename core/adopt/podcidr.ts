/**
 * A node's podCIDRs as blockipam would hold them (pure): where they come from on the Node, how
 * blocks of a pool's block size tile one, which pool may hold it, and the block size that keeps
 * host-local's reservations.
 */
import { BLOCK_SIZE_RANGE, blockCidrFor, blockNameOf, ordinalOf } from '../address/block-cidr.ts';
import { cidrCovers, cidrsOverlap, formatCidr, maskValue, parseCidr } from '../address/ip.ts';
import type { Cidr, IP } from '../address/ip.ts';
import { poolBlockSize, servesNode } from '../allocator/pools.ts';
import type { PoolSnapshot } from '../allocator/pools.ts';
import { isAssignable } from '../block/block.ts';
import type { IPPool, KubeObject } from '../resources.ts';

/** A Node with the fields adoption reads: its labels and the podCIDRs kube-controller-manager gave it. */
export interface PodCIDRNode extends KubeObject {
  spec?: { podCIDR?: string; podCIDRs?: readonly string[] };
}

/**
 * The node's podCIDRs: `spec.podCIDRs`, else `spec.podCIDR` (older API servers set only that),
 * as masked CIDRs in the order given (IPv4 first on a dual-stack node, as the API server keeps
 * it). A text that is not a CIDR is dropped: the API server validates both fields.
 * @returns [] for a node without podCIDR (kube-controller-manager not allocating node CIDRs, or
 *   not yet)
 */
export function podCIDRsOf(node: PodCIDRNode): Cidr[] {
  const texts = node.spec?.podCIDRs?.length
    ? node.spec.podCIDRs
    : node.spec?.podCIDR
      ? [node.spec.podCIDR]
      : [];
  return texts.map((text) => parseCidr(text, { strict: false })).filter((cidr) => cidr !== undefined);
}

/**
 * Blocks of prefix `blockSize` a podCIDR is cut into: 2^(blockSize − prefixLength), e.g. 1 for a
 * /24 in /24 blocks, 4 for a /24 in /26 blocks.
 * @returns undefined when a block would be larger than the podCIDR (blockSize < prefixLength): it
 *   would span addresses of other nodes' podCIDRs
 */
export function blocksPerPodCIDR(podCIDR: Cidr, blockSize: number): number | undefined {
  if (blockSize < podCIDR.prefixLength) return undefined;
  return 2 ** (blockSize - podCIDR.prefixLength);
}

/**
 * The block size to ask of a pool for this podCIDR: its own prefix length — one block per
 * podCIDR, whose reserved ordinals (network, `.1` gateway, broadcast) are exactly the addresses
 * host-local never hands out — raised to the family's largest block (/20, /116) for a wider podCIDR.
 * @returns undefined when the podCIDR is smaller than the family's smallest block (/30, /126)
 */
export function podCIDRBlockSize(podCIDR: Cidr): number | undefined {
  const range = BLOCK_SIZE_RANGE[podCIDR.family];
  if (podCIDR.prefixLength > range.max) return undefined;
  return Math.max(podCIDR.prefixLength, range.min);
}

/** Where an address lands once its podCIDR is cut into blocks of `blockSize`. */
export interface TilePlace {
  /** The block's IPAMBlock name, e.g. "10-244-1-64-26". */
  readonly block: string;
  readonly ordinal: number;
  /** False at a reserved ordinal (core's isAssignable): core never records it. */
  readonly assignable: boolean;
}

/** The block of prefix `blockSize` that holds `ip`, its ordinal there, and whether core may assign it. */
export function tilePlace(ip: IP, blockSize: number): TilePlace {
  const tile = blockCidrFor(ip, blockSize);
  const ordinal = ordinalOf(tile, ip) ?? 0;
  return { block: blockNameOf(tile), ordinal, assignable: isAssignable(tile, ordinal) };
}

/**
 * The smallest CIDR holding every one of `cidrs` (all of one family), e.g. 10.244.0.0/22 for
 * 10.244.0.0/24 and 10.244.3.0/24: what an operator who does not know the cluster CIDR can give
 * a pool. Undefined for no CIDR.
 */
export function coveringCidr(cidrs: readonly Cidr[]): Cidr | undefined {
  const [first] = cidrs;
  if (!first) return undefined;
  let prefix = Math.min(...cidrs.map((c) => c.prefixLength));
  const base = (p: number, c: Cidr): bigint => maskValue(c.base, c.family, p);
  while (prefix > 0 && cidrs.some((c) => base(prefix, c) !== base(prefix, first))) prefix--;
  return { family: first.family, base: base(prefix, first), prefixLength: prefix };
}

/** The pool that would hold a podCIDR's blocks (and whether it is disabled), or why none does. */
export type PoolChoice =
  | { readonly pool: IPPool; readonly blockSize: number; readonly disabled: boolean }
  | { readonly pool?: undefined; readonly why: string };

/**
 * The pool whose blocks a node's podCIDR becomes: the pool of the node whose CIDR covers the whole
 * podCIDR and that the node agent would claim from — core's eligiblePools rule (not shadowed by an
 * older pool, not being deleted, servesNode: Automatic, nodeSelector matching the node) — except
 * that a disabled pool may hold it: disabled is the safe state of such a pool while host-local
 * still hands out the podCIDRs' addresses. A namespaceSelector is not judged: it picks pods, not
 * podCIDRs. Pools that are not shadowed never overlap, so at most one covers it.
 * @returns the pool, its blockSize and `disabled`, or `why` naming each pool that overlaps the
 *   podCIDR and why it cannot hold it ("no IPPool overlaps it" when none does)
 */
export function choosePool(
  snapshot: PoolSnapshot,
  podCIDR: Cidr,
  nodeLabels: Readonly<Record<string, string>>,
): PoolChoice {
  const reasons: string[] = [];
  for (const pool of snapshot.pools) {
    const cidr = parseCidr(pool.spec.cidr);
    if (!cidr || !cidrsOverlap(cidr, podCIDR)) continue;
    const name = `IPPool ${pool.metadata.name} (${formatCidr(cidr)})`;
    const why = cidrCovers(cidr, podCIDR)
      ? exclusionOf(snapshot, pool, nodeLabels)
      : 'covers only part of it';
    if (why === undefined)
      return { pool, blockSize: poolBlockSize(pool), disabled: pool.spec.disabled === true };
    reasons.push(`${name} ${why}`);
  }
  return { why: reasons.length > 0 ? reasons.join('; ') : 'no IPPool overlaps it' };
}

/** Why a pool covering the podCIDR may not hold the node's blocks (undefined: it may), in eligiblePools' terms. */
function exclusionOf(
  snapshot: PoolSnapshot,
  pool: IPPool,
  nodeLabels: Readonly<Record<string, string>>,
): string | undefined {
  const shadow = snapshot.shadowed.find((s) => s.pool === pool.metadata.name);
  if (shadow) return `overlaps the older IPPool ${shadow.by}, so no node uses it`;
  if (pool.metadata.deletionTimestamp) return 'is being deleted';
  if (servesNode(pool, nodeLabels)) return undefined;
  return (pool.spec.assignmentMode ?? 'Automatic') !== 'Automatic'
    ? 'is Manual: its blocks serve only pods that request it'
    : 'has a nodeSelector that excludes the node';
}

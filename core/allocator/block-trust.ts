/**
 * Which IPAMBlocks the data path trusts (docs/design-core.md §Trusted blocks). The API server
 * accepts any IPAMBlock whose name matches its masked CIDR; the admission policy narrows who may
 * write what, but a node credential can still create objects the allocator never would (issue
 * 23, D1: an unowned /28 inside another node's /26 holding an allocation for the author, or
 * labels saying "affine to another node"). Routes, allocation and maxBlocksPerNode act only on
 * trusted blocks, so such an object costs its author's node, never another node's pods.
 *
 * A block is trusted only if, in this order:
 * 1. its `spec.cidr` is a masked CIDR (`invalid-cidr`);
 * 2. some IPPool's CIDR covers it (`outside-pools`);
 * 3. the pool named by its `ipam.blockipam.io/pool` label covers it (`pool-mismatch`);
 * 4. its prefix length is that pool's blockSize (`size-mismatch`);
 * 5. its core-derived labels are what core computes from its spec (`labels-mismatch`), but for
 *    node labels "borrowed": any node may add or remove one on any block (a borrow adds the
 *    borrower's own; the policy cannot compute whose key it is), so they are not part of trust;
 *    the affine label is (only the owner can change it);
 * 6. it overlaps no trusted block, where of two overlapping blocks passing 1–5 the older
 *    (creationTimestamp, then name) wins (`overlap`).
 * Every pool counts, disabled, being deleted or shadowed ones included: their blocks were
 * claimed legitimately and still need routes and releases; rule 6 settles overlapping pools.
 */
import { cidrCovers, parseCidr } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { poolOf } from '../block/block.ts';
import { labelProblems } from '../block/invariants.ts';
import { byName, type IPAMBlock, type IPPool } from '../resources.ts';
import { poolBlockSize } from './pools.ts';

/** Why a block is not trusted (a bounded set: metric label, condition reason). */
export type DistrustReason =
  'invalid-cidr' | 'outside-pools' | 'pool-mismatch' | 'size-mismatch' | 'labels-mismatch' | 'overlap';

export const DISTRUST_REASONS: readonly DistrustReason[] = [
  'invalid-cidr',
  'outside-pools',
  'pool-mismatch',
  'size-mismatch',
  'labels-mismatch',
  'overlap',
];

/** A block the data path ignores, and why. */
export interface IgnoredBlock {
  readonly block: IPAMBlock;
  readonly reason: DistrustReason;
  /** One sentence naming the rule's evidence (pool, sizes, label, the older block). */
  readonly message: string;
  /** For `overlap`: the older trusted block the data path keeps in this one's place. */
  readonly keptBlock?: IPAMBlock;
}

export interface BlockTrust {
  /** Trusted blocks, in input order. */
  readonly trusted: readonly IPAMBlock[];
  /** Ignored blocks, in input order. */
  readonly ignored: readonly IgnoredBlock[];
}

/**
 * Classifies `blocks` against `pools` (rules in the module comment). Pure; O(n log n) in the
 * blocks (a sort, then a walk up a containment forest whose depth is bounded by the number of
 * distinct prefix lengths) plus the size of their labels and allocations.
 * Overlap (rule 6) is judged among `blocks` only: a caller that passes a subset (one node's
 * blocks) gets rules 1–5 in full and rule 6 within that subset.
 */
export function classifyBlocks(blocks: readonly IPAMBlock[], pools: readonly IPPool[]): BlockTrust {
  const poolCidrs = pools.flatMap((pool) => {
    const cidr = parseCidr(pool.spec.cidr, { strict: false });
    return cidr ? [{ pool, cidr }] : [];
  });
  const byName = new Map(poolCidrs.map((p) => [p.pool.metadata.name, p]));
  const signature = poolsSignature(poolCidrs);
  const verdicts = new Map<IPAMBlock, Verdict>();
  const candidates: { block: IPAMBlock; cidr: Cidr }[] = [];
  for (const block of blocks) {
    const judged = judgedAlone(block, signature, () => judgeAlone(block, poolCidrs, byName));
    if ('reason' in judged) verdicts.set(block, judged);
    else candidates.push({ block, cidr: judged.cidr });
  }
  for (const [block, verdict] of overlapLosers(candidates)) verdicts.set(block, verdict);
  const trusted: IPAMBlock[] = [];
  const ignored: IgnoredBlock[] = [];
  for (const block of blocks) {
    const verdict = verdicts.get(block);
    if (verdict) ignored.push({ block, ...verdict });
    else trusted.push(block);
  }
  return { trusted, ignored };
}

/**
 * The trusted blocks affine to `node` by their spec (labels alone never count): what
 * maxBlocksPerNode is checked against.
 */
export function trustedAffine(
  blocks: readonly IPAMBlock[],
  pools: readonly IPPool[],
  node: string,
): IPAMBlock[] {
  return classifyBlocks(blocks, pools).trusted.filter((block) => block.spec.affinity === node);
}

interface PoolRange {
  pool: IPPool;
  cidr: Cidr;
}

/** Why one block is ignored (an {@link IgnoredBlock} without the block). */
type Verdict = Omit<IgnoredBlock, 'block'>;

type AloneVerdict = { cidr: Cidr } | Verdict;

/**
 * Rules 1–5 remembered per block object and pool set: a watch cache hands the same (frozen in
 * practice: core never mutates a block it read) object until the block changes, and an agent
 * classifies every block on every route pass (parsing and relabelling ~2,000 blocks cost
 * 60–100 ms per pass on two loaded cores; remembered, only the blocks that changed pay).
 */
const aloneMemo = new WeakMap<IPAMBlock, { signature: string; verdict: AloneVerdict }>();

function judgedAlone(block: IPAMBlock, signature: string, judge: () => AloneVerdict): AloneVerdict {
  const known = aloneMemo.get(block);
  if (known?.signature === signature) return known.verdict;
  const verdict = judge();
  aloneMemo.set(block, { signature, verdict });
  return verdict;
}

/** What rules 1–5 read of the pools: name, CIDR and block size of each. */
function poolsSignature(pools: readonly PoolRange[]): string {
  return pools.map((p) => `${p.pool.metadata.name} ${p.pool.spec.cidr} ${poolBlockSize(p.pool)}`).join('\n');
}

/** Rules 1–5, which look at one block and the pools. */
function judgeAlone(
  block: IPAMBlock,
  pools: readonly PoolRange[],
  byName: ReadonlyMap<string, PoolRange>,
): AloneVerdict {
  const cidr = parseCidr(block.spec.cidr);
  const text = block.spec.cidr;
  if (!cidr)
    return { reason: 'invalid-cidr', message: `spec.cidr ${JSON.stringify(text)} is not a masked CIDR` };
  if (!pools.some((p) => cidrCovers(p.cidr, cidr)))
    return { reason: 'outside-pools', message: `${text} lies outside every IPPool` };
  const label = poolOf(block);
  const named = byName.get(label);
  if (!named || !cidrCovers(named.cidr, cidr))
    return {
      reason: 'pool-mismatch',
      message: `its pool label ${JSON.stringify(label)} names no IPPool containing ${text}`,
    };
  const size = poolBlockSize(named.pool);
  if (size !== cidr.prefixLength)
    return {
      reason: 'size-mismatch',
      message: `${text} is a /${cidr.prefixLength} but IPPool ${label} has blockSize ${size}`,
    };
  const labels = labelProblems(block, cidr, { borrowed: false });
  if (labels.length > 0) return { reason: 'labels-mismatch', message: labels.join('; ') };
  return { cidr };
}

/**
 * Rule 6. Two CIDRs overlap only when one contains the other, so the candidates form a
 * containment forest (sorted by family, base, prefix length: a stack finds each one's parent).
 * Taken oldest first, a candidate is kept when no kept ancestor and no kept descendant exists;
 * keeping one marks its ancestors. Older first: an attacker cannot make an older block lose by
 * creating a newer one over it (creationTimestamp is set by the API server).
 */
function overlapLosers(candidates: readonly { block: IPAMBlock; cidr: Cidr }[]): Map<IPAMBlock, Verdict> {
  const n = candidates.length;
  const byRange = [...candidates.keys()].sort((a, b) => rangeOrder(candidates[a]!, candidates[b]!));
  const parent = new Array<number>(n).fill(-1);
  const stack: number[] = [];
  for (const i of byRange) {
    const c = candidates[i]!;
    while (stack.length > 0 && !cidrCovers(candidates[stack.at(-1)!]!.cidr, c.cidr)) stack.pop();
    parent[i] = stack.at(-1) ?? -1;
    stack.push(i);
  }
  const kept = new Array<boolean>(n).fill(false);
  const keptBelow = new Array<number>(n).fill(-1);
  const losers = new Map<IPAMBlock, Verdict>();
  const byAge = [...candidates.keys()].sort((a, b) => ageOrder(candidates[a]!.block, candidates[b]!.block));
  for (const i of byAge) {
    let winner = keptBelow[i]!;
    for (let up = parent[i]!; up !== -1 && winner === -1; up = parent[up]!) if (kept[up]) winner = up;
    if (winner !== -1) {
      const older = candidates[winner]!.block;
      losers.set(candidates[i]!.block, {
        reason: 'overlap',
        message: `${candidates[i]!.block.spec.cidr} overlaps the older IPAMBlock ${older.metadata.name} (${older.spec.cidr})`,
        keptBlock: older,
      });
      continue;
    }
    kept[i] = true;
    for (let up = parent[i]!; up !== -1 && keptBelow[up] === -1; up = parent[up]!) keptBelow[up] = i;
  }
  return losers;
}

/** Family, then base, then wider first: a container sorts before what it contains. */
function rangeOrder(a: { block: IPAMBlock; cidr: Cidr }, b: { block: IPAMBlock; cidr: Cidr }): number {
  return (
    a.cidr.family - b.cidr.family ||
    (a.cidr.base < b.cidr.base ? -1 : a.cidr.base > b.cidr.base ? 1 : 0) ||
    a.cidr.prefixLength - b.cidr.prefixLength ||
    ageOrder(a.block, b.block)
  );
}

/** Older first: creationTimestamp (RFC 3339, one format: text order is time order), then name. */
function ageOrder(a: IPAMBlock, b: IPAMBlock): number {
  return (
    (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || byName(a, b)
  );
}

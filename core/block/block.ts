/**
 * Pure block operations (docs/design-core.md §1 and §2): create, pick an ordinal (least recently freed, cooldown),
 * allocate, release by handle (with sequence-number and pod-UID preconditions), change affinity.
 * Every function returns a new object and never mutates its input; "full" or "refused" are
 * return values. Encoding and invariants: docs/design-core.md; checker: invariants.ts.
 */
import {
  addressTextAt,
  blockCapacity,
  blockNameOf,
  blockOrdinals,
  reservedOrdinals,
} from '../address/block-cidr.ts';
import { mustParseCidr } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import { API_VERSION } from '../resources.ts';
import type { Allocation, IPAMBlock } from '../resources.ts';
import { isAllocatable, isSafeSequence, repairedSequence, trustedTimeMs } from './frozen.ts';
import { blockLabels, POOL_LABEL, relabel } from './labels.ts';
import { rfc3339 } from '../time.ts';

/** The block's CIDR (validated at creation). */
export function cidrOf(block: IPAMBlock): Cidr {
  return mustParseCidr(block.spec.cidr);
}

/** Pool name from the block's label. */
export function poolOf(block: IPAMBlock): string {
  return block.metadata.labels?.[POOL_LABEL] ?? '';
}

/**
 * A new, empty block affine to `node` (null = unowned).
 * `sequence` starts at the clock in ms so a block deleted and claimed again never repeats a
 * sequence number a late release might still carry (Calico seeds it the same way).
 */
export function newBlock(options: {
  cidr: Cidr;
  pool: string;
  node: string | null;
  nowMs: number;
}): IPAMBlock {
  const spec = {
    cidr: `${addressTextAt(options.cidr, 0)}/${options.cidr.prefixLength}`,
    affinity: options.node,
    affinityClaimTime: rfc3339(options.nowMs),
    sequence: Math.floor(options.nowMs),
    allocations: {},
    freed: [],
  };
  return {
    apiVersion: API_VERSION,
    kind: 'IPAMBlock',
    metadata: {
      name: blockNameOf(options.cidr),
      labels: blockLabels(spec, options.pool, options.cidr.family),
    },
    spec,
  };
}

/** Options of {@link pickOrdinal}. */
export interface PickOptions {
  nowMs: number;
  /** IPAMConfig.ipCooldownSeconds. */
  cooldownSeconds: number;
  /** Ordinals an IPReservation covers (never picked). */
  excluded?: ReadonlySet<number>;
  /** 'fresh': never-used or cooled-down only; 'any': also still-cooling ones (last resort). */
  mode: 'fresh' | 'any';
}

/**
 * The ordinal to hand out next, or undefined when the block has none for this mode. Order:
 * never-used (lowest first), then freed ordinals whose cooldown is over (least recently freed
 * first), then — mode 'any' only — still-cooling ones, least recently freed first. A `releasedAt`
 * core does not trust (frozen.ts trustedTimeMs: later than now plus the clock skew) reads as the
 * epoch: that ordinal is cooled, so a date far in the future cannot hide a free address. Whether
 * the block may be allocated from at all (frozen.ts) is the caller's question.
 */
export function pickOrdinal(block: IPAMBlock, options: PickOptions): number | undefined {
  const { allocations, freed } = block.spec;
  const excluded = options.excluded ?? new Set<number>();
  const cidr = cidrOf(block);
  const size = blockOrdinals(cidr);
  const used = new Set<number>(reservedOrdinals(cidr));
  for (const entry of freed) used.add(entry.ordinal);
  for (let ordinal = 0; ordinal < size; ordinal++) {
    if (!used.has(ordinal) && allocations[ordinal] === undefined && !excluded.has(ordinal)) return ordinal;
  }
  const cooledBefore = options.nowMs - options.cooldownSeconds * 1000;
  // Defensive: a corrupted `freed` (reserved, out-of-range or still-allocated entries, I6) must
  // not hide the good entries behind it — allocateOrdinal would refuse what we return.
  const available = freed.filter(
    (entry) =>
      !excluded.has(entry.ordinal) &&
      isAssignable(cidr, entry.ordinal) &&
      allocations[entry.ordinal] === undefined,
  );
  const cooled = available.find((entry) => trustedTimeMs(entry.releasedAt, options.nowMs) <= cooledBefore);
  if (cooled) return cooled.ordinal;
  return options.mode === 'any' ? available[0]?.ordinal : undefined;
}

/** True when `ordinal` can hold an allocation in a block of `cidr`: in range and not reserved. */
export function isAssignable(cidr: Cidr, ordinal: number): boolean {
  return (
    Number.isInteger(ordinal) &&
    ordinal >= 0 &&
    ordinal < blockOrdinals(cidr) &&
    !reservedOrdinals(cidr).includes(ordinal)
  );
}

/** Who an allocation is for; `node` is the node the pod runs on. */
export type Owner = Omit<Allocation, 'allocatedAt' | 'sequence'>;

/**
 * Allocates `ordinal` to `owner`: bumps the block's sequence and records it on the allocation.
 * @returns the new block and the allocation, or undefined when the ordinal is reserved or taken
 */
export function allocateOrdinal(
  block: IPAMBlock,
  ordinal: number,
  owner: Owner,
  nowMs: number,
): { block: IPAMBlock; allocation: Allocation } | undefined {
  if (!isAssignable(cidrOf(block), ordinal) || block.spec.allocations[ordinal] !== undefined)
    return undefined;
  const sequence = block.spec.sequence + 1;
  const allocation: Allocation = { ...owner, allocatedAt: rfc3339(nowMs), sequence };
  const spec = {
    ...block.spec,
    sequence,
    allocations: { ...block.spec.allocations, [ordinal]: allocation },
    freed: block.spec.freed.filter((entry) => entry.ordinal !== ordinal),
  };
  return { block: withSpec(block, spec), allocation };
}

/** Preconditions of a release: both optional; when given they must match the allocation. */
export interface ReleasePreconditions {
  sequence?: number;
  podUID?: string;
  /**
   * Only allocations made for this node (`allocation.node`) are touched; others holding the handle
   * are left as they are, neither released nor refused — a node's DEL never writes another
   * node's allocation, which its admission policy would refuse (a handle planted in the
   * node's block by another node's credential must not block its DELs).
   */
  node?: string;
}

/** One allocation released, or one refused because a precondition did not hold. */
export interface ReleasedOrdinal {
  ordinal: number;
  /** The `allocations` key it was stored under (the ordinal in decimal, unless corrupted). */
  key: string;
  allocation: Allocation;
}

/**
 * Releases every ordinal of `block` held by `handle` whose sequence (and pod UID) match the given
 * preconditions; refused ones are reported and left untouched. Freed ordinals go to the tail of
 * `freed` (least-recently-freed reuse). `block` is returned as is when nothing was released.
 * An allocation found on a key that is not an assignable ordinal (a corrupted block: reserved,
 * out of range, not canonical) is removed but never enters `freed` (I6), so it can never be
 * picked and refused ahead of the good entries behind it.
 * Releases work in a frozen block too (frozen.ts). When `spec.sequence` is unsafe (above 2^52 or
 * not an integer) the release writes {@link repairedSequence} in its place: the block's writes
 * would otherwise carry a rounded sequence. The release time is max(now, the last `freed` entry's
 * trusted time): a `releasedAt` later than now plus the clock skew is ignored, so one entry dated
 * years ahead does not date every later release the same.
 */
export function releaseHandle(
  block: IPAMBlock,
  handle: string,
  preconditions: ReleasePreconditions,
  nowMs: number,
): { block: IPAMBlock; released: ReleasedOrdinal[]; refused: ReleasedOrdinal[] } {
  const released: ReleasedOrdinal[] = [];
  const refused: ReleasedOrdinal[] = [];
  for (const [key, allocation] of Object.entries(block.spec.allocations)) {
    if (allocation.handle !== handle) continue;
    if (preconditions.node !== undefined && allocation.node !== preconditions.node) continue;
    const ok =
      (preconditions.sequence === undefined || preconditions.sequence === allocation.sequence) &&
      (preconditions.podUID === undefined ||
        allocation.podUID === undefined ||
        preconditions.podUID === allocation.podUID);
    (ok ? released : refused).push({ ordinal: Number(key), key, allocation });
  }
  if (released.length === 0) return { block, released, refused };
  // Never earlier than the last release: nodes' clocks differ, and `freed` stays in order (I7).
  const last = block.spec.freed.at(-1);
  const releaseTime = Math.max(nowMs, last ? trustedTimeMs(last.releasedAt, nowMs) : 0);
  const allocations = { ...block.spec.allocations };
  for (const { key } of released) delete allocations[key];
  const cidr = cidrOf(block);
  const listed = new Set(block.spec.freed.map((entry) => entry.ordinal));
  const freed = [
    ...block.spec.freed,
    ...released
      .filter(
        ({ ordinal, key }) => key === String(ordinal) && isAssignable(cidr, ordinal) && !listed.has(ordinal),
      )
      .map(({ ordinal }) => ({ ordinal, releasedAt: rfc3339(releaseTime) })),
  ];
  const sequence = isSafeSequence(block.spec.sequence) ? block.spec.sequence : repairedSequence(block, nowMs);
  return {
    block: withSpec(block, { ...block.spec, sequence, allocations, freed }),
    released,
    refused,
  };
}

/** Sets the block's affinity (null = unowned) and claim time. */
export function setAffinity(block: IPAMBlock, node: string | null, nowMs: number): IPAMBlock {
  return withSpec(block, { ...block.spec, affinity: node, affinityClaimTime: rfc3339(nowMs) });
}

/** True when nothing is allocated in the block. */
export function isEmpty(block: IPAMBlock): boolean {
  return Object.keys(block.spec.allocations).length === 0;
}

/**
 * Since when (ms) the block has been empty: its last release or its claim, whichever is later,
 * each read with frozen.ts trustedTimeMs (a date later than `nowMs` plus the clock skew reads as
 * the epoch, so a future `affinityClaimTime` or `releasedAt` cannot keep a block from going idle).
 * Undefined when it is not empty.
 */
export function emptySinceMs(block: IPAMBlock, nowMs: number): number | undefined {
  if (!isEmpty(block)) return undefined;
  let since = trustedTimeMs(block.spec.affinityClaimTime, nowMs);
  for (const entry of block.spec.freed) since = Math.max(since, trustedTimeMs(entry.releasedAt, nowMs));
  return since;
}

/** Assignable ordinals in the block: {@link blockCapacity} of its CIDR. */
export function capacityOf(block: IPAMBlock): number {
  return blockCapacity(cidrOf(block));
}

/**
 * Free addresses of one block the allocator may hand out: assignable ordinals minus allocations,
 * never below 0; 0 for a frozen block (frozen.ts), which is no room for its node.
 */
export function blockFree(block: IPAMBlock): number {
  if (!isAllocatable(block)) return 0;
  return Math.max(0, capacityOf(block) - Object.keys(block.spec.allocations).length);
}

function withSpec(block: IPAMBlock, spec: IPAMBlock['spec']): IPAMBlock {
  const labels = relabel(block.metadata.labels, spec, poolOf(block), cidrOf(block).family);
  return { ...block, metadata: { ...block.metadata, labels }, spec };
}

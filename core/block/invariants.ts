/**
 * The invariants of one IPAMBlock, as a checker that returns problems (empty = valid). The
 * allocator keeps them on every write; property tests check them after random operation
 * sequences; `ipamctl check` reports them. Why each holds: docs/design-core.md §Invariants.
 */
import { blockNameOf, blockOrdinals, isAllowedBlockSize, reservedOrdinals } from '../address/block-cidr.ts';
import { parseCidr } from '../address/ip.ts';
import type { Cidr } from '../address/ip.ts';
import type { IPAMBlock } from '../resources.ts';
import { CLOCK_SKEW_MS, trustedTimeMs } from './frozen.ts';
import { isNodeLabel, labelsOf, nodeLabel, POOL_LABEL } from './labels.ts';

/**
 * Checks one block. Problems are sentences naming the block and the ordinal, e.g.
 * `IPAMBlock 10-244-0-0-26: ordinal 0 is reserved but allocated`.
 * @param options.nowMs when given, timestamps later than now (+60 s clock skew) are problems
 */
export function checkBlockInvariants(block: IPAMBlock, options: { nowMs?: number } = {}): string[] {
  const name = block.metadata.name;
  const problems: string[] = [];
  const say = (text: string): void => {
    problems.push(`IPAMBlock ${name}: ${text}`);
  };
  const cidr = parseCidr(block.spec.cidr);
  if (!cidr) return [`IPAMBlock ${name}: spec.cidr ${JSON.stringify(block.spec.cidr)} is not a masked CIDR`];
  // I1: the name is derived from the CIDR, so two objects can never describe one block.
  if (blockNameOf(cidr) !== name) say(`name differs from ${blockNameOf(cidr)}, the name of its CIDR`);
  // I2: block size within the family's range (room for reserved ordinals + 1 pod).
  if (!isAllowedBlockSize(cidr.family, cidr.prefixLength))
    say(`block size /${cidr.prefixLength} is not allowed`);
  const size = blockOrdinals(cidr);
  const reserved = new Set(reservedOrdinals(cidr));
  const handles = new Map<string, number>();
  const sequences = new Map<number, number>();
  for (const [key, allocation] of Object.entries(block.spec.allocations)) {
    const ordinal = Number(key);
    // I3: keys are canonical in-range ordinals, never a reserved one.
    if (!/^(0|[1-9][0-9]*)$/.test(key) || ordinal >= size)
      say(`allocation key ${JSON.stringify(key)} is not an ordinal of the block`);
    else if (reserved.has(ordinal)) say(`ordinal ${ordinal} is reserved but allocated`);
    // I4: one ordinal per handle per block (a handle holds one address per family).
    const previous = handles.get(allocation.handle);
    if (previous !== undefined) say(`handle ${allocation.handle} holds ordinals ${previous} and ${key}`);
    handles.set(allocation.handle, ordinal);
    // I5: sequence numbers are unique and never above the block's counter.
    if (allocation.sequence > block.spec.sequence)
      say(`ordinal ${key} has sequence ${allocation.sequence} above the block's ${block.spec.sequence}`);
    const same = sequences.get(allocation.sequence);
    if (same !== undefined) say(`ordinals ${same} and ${key} share sequence ${allocation.sequence}`);
    sequences.set(allocation.sequence, ordinal);
    if (!allocation.handle || !allocation.node) say(`ordinal ${key} lacks a handle or node`);
    checkTime(allocation.allocatedAt, `ordinal ${key} allocatedAt`, options.nowMs, say);
  }
  checkFreed(block, size, reserved, options.nowMs, say);
  for (const text of labelProblems(block, cidr)) say(text);
  checkTime(block.spec.affinityClaimTime, 'affinityClaimTime', options.nowMs, say);
  return problems;
}

function checkFreed(
  block: IPAMBlock,
  size: number,
  reserved: ReadonlySet<number>,
  nowMs: number | undefined,
  say: (text: string) => void,
): void {
  const seen = new Set<number>();
  let last = -Infinity;
  for (const { ordinal, releasedAt } of block.spec.freed) {
    // I6: a freed ordinal is in range, not reserved, listed once, and not allocated.
    if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal >= size || reserved.has(ordinal))
      say(`freed ordinal ${ordinal} is not assignable`);
    if (seen.has(ordinal)) say(`ordinal ${ordinal} is freed twice`);
    if (block.spec.allocations[ordinal] !== undefined) say(`ordinal ${ordinal} is both allocated and freed`);
    seen.add(ordinal);
    // I7: `freed` is in release order (least recently freed first), by the dates core trusts: a
    // date in the future reads as the epoch (frozen.ts), and core's next release is dated now.
    const at = nowMs === undefined ? Date.parse(releasedAt) : trustedTimeMs(releasedAt, nowMs);
    if (at < last) say(`freed list is out of release order at ordinal ${ordinal}`);
    last = Math.max(last, at);
    checkTime(releasedAt, `freed ordinal ${ordinal} releasedAt`, nowMs, say);
  }
}

/**
 * How the block's core-derived labels (pool, family, region, node: labels.ts) differ from what
 * {@link blockLabels} computes from its spec and pool label; empty = they match. Labels others
 * set are not looked at. Also one of the trust rules (allocator/block-trust.ts): a label that
 * says "affine to B" while the spec says otherwise must count for nothing.
 * @param cidr the block's parsed `spec.cidr`
 * @param options.borrowed also check the node labels "borrowed" (default true). The trust rule
 *   passes false: any node may add or remove a label "borrowed" on any block (the admission
 *   policy cannot tell whose label key it is), so a block that trusted only with exact
 *   "borrowed" labels could be cut off by one foreign label. They
 *   are a lookup index; `ipamctl check` still reports them.
 */
export function labelProblems(
  block: IPAMBlock,
  cidr: Cidr,
  options: { readonly borrowed?: boolean } = {},
): string[] {
  const checkBorrowed = options.borrowed ?? true;
  const problems: string[] = [];
  const say = (text: string): void => {
    problems.push(text);
  };
  // I8: labels match the spec (pool, family, region) — lookups by label would otherwise miss blocks.
  const pool = block.metadata.labels?.[POOL_LABEL];
  if (!pool) return [`lacks the ${POOL_LABEL} label`];
  const want = labelsOf(block.spec, pool, cidr);
  const have = block.metadata.labels ?? {};
  // I9: a node's label is set iff the node is the block's affinity ("affine") or holds an
  // allocation in it ("borrowed"): one LIST on the label's existence finds all of a node's
  // addresses (duplicate ADD, release, GC, CHECK).
  const holders = new Map<string, string>();
  for (const [key, allocation] of Object.entries(block.spec.allocations))
    if (
      allocation.node &&
      allocation.node !== block.spec.affinity &&
      !holders.has(nodeLabel(allocation.node))
    )
      holders.set(nodeLabel(allocation.node), `node ${JSON.stringify(allocation.node)} holds ordinal ${key}`);
  for (const [key, value] of Object.entries(want)) {
    if (have[key] === value) continue;
    if (!checkBorrowed && value === 'borrowed' && (have[key] === undefined || have[key] === 'borrowed'))
      continue;
    const holder = holders.get(key);
    if (holder !== undefined && have[key] === undefined)
      say(`${holder} but the label ${key}=${value} is missing: lookups by node would miss it`);
    else say(`label ${key} is ${JSON.stringify(have[key])}, want ${JSON.stringify(value)}`);
  }
  for (const key of Object.keys(have))
    if (isNodeLabel(key) && want[key] === undefined && (checkBorrowed || have[key] !== 'borrowed'))
      say(`stale label ${key}: no allocation of that node here and not its affinity`);
  return problems;
}

function checkTime(text: string, what: string, nowMs: number | undefined, say: (text: string) => void): void {
  const at = Date.parse(text);
  if (Number.isNaN(at)) say(`${what} ${JSON.stringify(text)} is not a timestamp`);
  else if (nowMs !== undefined && at > nowMs + CLOCK_SKEW_MS) say(`${what} ${text} is in the future`);
}

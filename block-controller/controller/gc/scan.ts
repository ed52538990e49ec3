/**
 * The leak scan (pure): every allocation of the watched blocks gets a verdict; leaks become
 * candidates with the time they were first seen (an injected clock), and a handle is released
 * only when every one of its allocations is a candidate past its grace period — all or nothing
 * per handle (Calico #5044: a dual-stack handle whose pod reports only its IPv4 address must
 * lose neither).
 */
import { addressTextAt, cidrFromBlockName, POOL_LABEL } from 'blockipam/core';
import type { Allocation, IPAMBlock } from 'blockipam/core';
import type { OwnerIndex } from './owners.ts';
import { leakReason } from './verdict.ts';
import type { LeakReason } from './verdict.ts';

/** One allocation as the scan sees it. */
interface ScannedAllocation {
  /** `<block>/<ordinal>/<handle>/<sequence>`: changes when the ordinal is handed out again. */
  key: string;
  block: string;
  pool: string;
  ordinal: number;
  address: string;
  allocation: Allocation;
}

/** A leaked allocation. */
export interface LeakCandidate extends ScannedAllocation {
  reason: LeakReason;
}

/** What one scan found. */
export interface Scan {
  candidates: LeakCandidate[];
  /** Every allocation by handle (to decide all-or-nothing). */
  byHandle: Map<string, ScannedAllocation[]>;
  /** Allocations per node (`allocation.node`): a deleted node's blocks wait for zero. */
  perNode: Map<string, number>;
}

/** Scans `blocks` against `owners`. Cost: O(allocations). */
export function scanAllocations(blocks: readonly IPAMBlock[], owners: OwnerIndex): Scan {
  const scan: Scan = { candidates: [], byHandle: new Map(), perNode: new Map() };
  for (const block of blocks) {
    const cidr = cidrFromBlockName(block.metadata.name);
    if (!cidr) continue;
    for (const [key, allocation] of Object.entries(block.spec.allocations)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) continue;
      const ordinal = Number(key);
      const scanned: ScannedAllocation = {
        key: `${block.metadata.name}/${ordinal}/${allocation.handle}/${allocation.sequence}`,
        block: block.metadata.name,
        pool: block.metadata.labels?.[POOL_LABEL] ?? '',
        ordinal,
        address: addressTextAt(cidr, ordinal),
        allocation,
      };
      scan.byHandle.set(allocation.handle, [...(scan.byHandle.get(allocation.handle) ?? []), scanned]);
      scan.perNode.set(allocation.node, (scan.perNode.get(allocation.node) ?? 0) + 1);
      const reason = leakReason(allocation, scanned.address, owners);
      if (reason) scan.candidates.push({ ...scanned, reason });
    }
  }
  return scan;
}

/**
 * Leak candidates with the time each was first seen. A candidate that stops being one (its pod
 * came back, the ordinal was released or handed out again — a new key) or changes its reason is
 * forgotten, so its grace period starts afresh if it leaks again. In memory only, by design: a new leader starts
 * every grace period again — a release comes later after a failover, never earlier
 * (docs/design-controller.md §4).
 */
export class LeakCandidates {
  readonly #firstSeenMs = new Map<string, number>();
  #current = new Map<string, LeakCandidate>();

  /**
   * Replaces the candidate set with `found`, keeping the first-seen times of those still there.
   * @returns the candidates seen for the first time (the leaks-found counter)
   */
  observe(found: readonly LeakCandidate[], nowMs: number): LeakCandidate[] {
    const next = new Map(found.map((c) => [c.key, c]));
    // gone, or another reason now (a deleted node back: `node-gone` → `pod-gone`, and its
    // kubelet may still send the DEL): the grace period starts afresh
    for (const key of this.#firstSeenMs.keys())
      if (next.get(key)?.reason !== this.#current.get(key)?.reason || !next.has(key))
        this.#firstSeenMs.delete(key);
    const fresh: LeakCandidate[] = [];
    for (const [key, candidate] of next)
      if (!this.#firstSeenMs.has(key)) {
        this.#firstSeenMs.set(key, nowMs);
        fresh.push(candidate);
      }
    this.#current = next;
    return fresh;
  }

  /**
   * True when `key` is a candidate whose grace period is over: `graceMs` after it was first
   * seen; `node-gone` once its node's quarantine is over (no kubelet is left to send a DEL).
   */
  isDue(key: string, nowMs: number, rules: DueRules): boolean {
    const candidate = this.#current.get(key);
    const since = this.#firstSeenMs.get(key);
    if (!candidate || since === undefined) return false;
    if (candidate.reason === 'node-gone') return !rules.quarantined(candidate.allocation.node);
    return nowMs - since >= rules.graceMs;
  }

  get(key: string): LeakCandidate | undefined {
    return this.#current.get(key);
  }

  /** Forgets `key` (released, or gone meanwhile). */
  forget(key: string): void {
    this.#firstSeenMs.delete(key);
    this.#current.delete(key);
  }

  all(): LeakCandidate[] {
    return [...this.#current.values()];
  }

  get size(): number {
    return this.#current.size;
  }
}

/** When a candidate is due ({@link LeakCandidates.isDue}). */
export interface DueRules {
  /** IPAMConfig leakGracePeriodSeconds in ms; 0 disables reclaiming. */
  readonly graceMs: number;
  /** Whether a deleted node's quarantine still holds its allocations (gc/gone-nodes.ts). */
  readonly quarantined: (node: string) => boolean;
}

/**
 * The handles to release now: those whose every allocation is a due candidate. `rules.graceMs`
 * 0 disables reclaiming (IPAMConfig leakGracePeriodSeconds: 0).
 */
export function dueHandles(
  scan: Scan,
  candidates: LeakCandidates,
  nowMs: number,
  rules: DueRules,
): LeakCandidate[][] {
  if (rules.graceMs <= 0) return [];
  const due: LeakCandidate[][] = [];
  const seen = new Set<string>();
  for (const candidate of candidates.all()) {
    const handle = candidate.allocation.handle;
    if (seen.has(handle)) continue;
    seen.add(handle);
    const all = scan.byHandle.get(handle) ?? [];
    if (all.length > 0 && all.every((a) => candidates.isDue(a.key, nowMs, rules)))
      due.push(all.map((a) => candidates.get(a.key)).filter((c) => c !== undefined));
  }
  return due;
}

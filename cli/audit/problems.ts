/**
 * What `ipamctl check` finds: problems (exit 1) and information (no effect on the exit code),
 * each of one kind, naming the objects involved, some with what to do. Leaked allocations are
 * also listed with everything `release --from-report` needs to free exactly them (block,
 * ordinal, handle, sequence number, pod UID).
 */

/**
 * Kinds, in the order the summary prints them — the most urgent first: addresses about to be
 * freed under live pods, then one address held twice, then what lets a block be wiped or stops
 * its writes — with their one-line titles.
 */
export const PROBLEM_KINDS = {
  'terminating-block': 'Terminating blocks still holding allocations (freed under live pods once they go)',
  'duplicate-address': 'One address allocated in more than one block',
  'foreign-metadata': 'Blocks carrying finalizers or ownerReferences (core sets none)',
  'unsafe-sequence': 'Blocks with a sequence number above 2^52 (nothing is allocated from them)',
  'ignored-block': 'Blocks every agent and the allocator ignore (not trusted by core)',
  'overlapping-pools': 'Pools whose CIDRs overlap',
  'invalid-block': 'Blocks breaking a block invariant',
  'future-date': 'Block dates later than now (not trusted by core)',
  'oversized-managed-fields': 'Blocks whose metadata.managedFields another writer grew (core resets them)',
  'leaked-pod-deleted': 'Leaked: allocations of deleted pods',
  'leaked-pod-uid': 'Leaked: allocations of an earlier pod with the same name (another UID)',
  'leaked-node-deleted': 'Leaked: allocations of deleted nodes',
  'pod-on-deleted-node':
    'Allocations of deleted nodes whose pod object still exists (not offered for release while the pod exists)',
  'ip-in-use-by-other-pod':
    "Leaked allocations whose address is another live pod's IP (not offered for release)",
  'pod-ip-unallocated': 'Pod IPs in blockipam ranges with no allocation',
  'duplicate-pod-ip': 'One pod IP used by more than one live pod',
  'block-affinity-deleted-node': 'Blocks affine to deleted nodes',
  'queued-del-unreadable': "Files in this node's deletion queue that are no queued DEL (never replayed)",
  'queued-del':
    'DELs queued on this node for the agent (their addresses stay allocated until it replays them)',
  'adoption-pending': 'Pod IPs on nodes not adopted yet (host-local still holds them)',
  'empty-block': 'Empty blocks',
} as const;

export type ProblemKind = keyof typeof PROBLEM_KINDS;

/**
 * Kinds that are information only: they never make `check` exit 1. A queued DEL resolves itself
 * (the agent replays it); the leak it explains is still reported as one. A node not adopted yet
 * is a step of a migration, not a fault.
 */
export const INFO_KINDS: ReadonlySet<ProblemKind> = new Set([
  'queued-del',
  'adoption-pending',
  'empty-block',
]);

/** One finding. */
export interface Problem {
  kind: ProblemKind;
  /** 'info' for {@link INFO_KINDS}, else 'problem'. */
  severity: 'problem' | 'info';
  /** A sentence naming the objects, e.g. "10.244.0.5 (IPAMBlock 10-244-0-0-26) is held by …". */
  message: string;
  /** Objects involved, "Kind/name" or "Pod/namespace/name". */
  objects: string[];
  /** What to do about it, naming the objects (a command to run where there is one). */
  hint?: string;
}

/** The problem kinds that make an allocation leaked (the only reasons a report's `leaked` holds). */
export const LEAK_REASONS = ['leaked-pod-deleted', 'leaked-pod-uid', 'leaked-node-deleted'] as const;

export type LeakReason = (typeof LEAK_REASONS)[number];

/** An allocation `check` calls leaked: enough to release exactly it, and nothing else. */
export interface LeakedAllocation {
  address: string;
  block: string;
  ordinal: number;
  handle: string;
  /** The allocation's sequence number: a release carrying it cannot free a later allocation. */
  sequence: number;
  node: string;
  namespace?: string;
  pod?: string;
  podUID?: string;
  allocatedAt: string;
  /** Why it is leaked; 'requested' only for `release --ip` (an operator's choice, never in a report). */
  reason: LeakReason | 'requested';
}

/** Builds a problem with the severity its kind implies (and a hint, when given). */
export function problem(kind: ProblemKind, message: string, objects: string[], hint?: string): Problem {
  const severity = INFO_KINDS.has(kind) ? 'info' : 'problem';
  return { kind, severity, message, objects, ...(hint === undefined ? {} : { hint }) };
}

/**
 * The identity of an allocation: block + ordinal + handle + sequence number. The same key in two
 * reports (or in a report and a block) means the same allocation; the address is derived from
 * block + ordinal and never trusted on its own.
 */
export function leakKey(leak: Pick<LeakedAllocation, 'block' | 'ordinal' | 'handle' | 'sequence'>): string {
  return `${leak.block}|${leak.ordinal}|${leak.handle}|${leak.sequence}`;
}

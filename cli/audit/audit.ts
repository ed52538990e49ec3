/**
 * The whole audit: snapshot → every check → problems, leaked allocations, counts. One step reads
 * again: the confirmation. When any owner finding (leak, pod on a deleted node, leaked address in
 * use) or "pod IP with no allocation" candidate exists, the blocks are listed again AFTER the pod
 * and node LISTs — `confirmAfterMs` after them when there is an owner finding:
 * - an owner finding is kept only if that later LIST still holds the allocation (same block,
 *   ordinal, handle and sequence number) — an allocation released (and its pod deleted) between
 *   the first block LIST and the pod LIST is not a leak, nor is one whose pod object went first
 *   and whose CNI DEL came within `confirmAfterMs` (a normal deletion on a real node);
 * - a pod-IP candidate is kept only if the later LIST has no allocation of the IP and a re-read
 *   of the pod still shows the IP with the same UID (a pod's IP is set after its allocation).
 *   A pod IP host-local still holds on a node not opted in to adoption (`adoption-pending`,
 *   information) is no candidate: no block LIST or pod read is spent on it.
 * docs/design-cli.md §The snapshot.
 */
import { isLivePod, podIPs } from 'blockipam/core';
import type { Datastore, IPAMBlock } from 'blockipam/core';
import { readDeletionQueue } from 'blockipam/core/cni';
import {
  affinityProblems,
  duplicateAddresses,
  ignoredBlockProblems,
  invariantProblems,
  managedFieldsProblems,
  poolOverlapProblems,
} from './block-checks.ts';
import { frozenBlockProblems } from './frozen-checks.ts';
import {
  allocatedAddresses,
  liveIPUsers,
  managedRanges,
  ownerFindings,
  podIPProblems,
  unallocatedProblem,
} from './owner-checks.ts';
import type { OwnerFinding, UnallocatedCandidate } from './owner-checks.ts';
import { leakKey, PROBLEM_KINDS } from './problems.ts';
import { deletionQueueView, noteQueuedLeaks, queuedDelProblems } from './queue-checks.ts';
import type { DeletionQueueView } from './queue-checks.ts';
import type { LeakedAllocation, Problem, ProblemKind } from './problems.ts';
import { relistBlocks, takeSnapshot } from './snapshot.ts';
import type { Snapshot, SnapshotOptions } from './snapshot.ts';

/** Object counts of the snapshot. */
export interface AuditCounts {
  pools: number;
  blocks: number;
  allocations: number;
  nodes: number;
  pods: number;
}

/** How the owner findings were confirmed (report field `confirmation`). */
export interface AuditConfirmation {
  /** Seconds between the pod and node LISTs and the confirmation block LIST (0: at once). */
  afterSeconds: number;
  /** Owner findings of the snapshot (before confirmation). */
  suspects: number;
  /** Of those, released (or re-allocated) by the confirmation LIST: not reported. */
  released: number;
}

/** Result of {@link runAudit}. `problems` are sorted by kind (PROBLEM_KINDS order), then message. */
export interface AuditResult {
  snapshot: Snapshot;
  counts: AuditCounts;
  problems: Problem[];
  leaked: LeakedAllocation[];
  confirmation: AuditConfirmation;
  /** The node's deletion queue, when one was read (`AuditOptions.deletionQueue`). */
  deletionQueue?: DeletionQueueView;
}

/** Options of {@link runAudit}. */
export interface AuditOptions extends SnapshotOptions {
  /**
   * How long an owner finding's allocation must stay held after its owner was seen gone, ms
   * (default 0: the confirmation LIST follows the pod and node LISTs at once). Waited only when
   * there is an owner finding.
   */
  confirmAfterMs?: number;
  /** Waits `ms` (default: a timer). Test seam: the wait is where a runtime's late DEL lands. */
  sleep?: (ms: number) => Promise<void>;
  /** Told before the wait: how many owner findings wait for confirmation, and for how long. */
  onConfirmWait?: (suspects: number, ms: number) => void;
  /**
   * A node's deletion queue directory (core's `deletionQueueDirOf`), read after the confirmation
   * LIST: each entry a finding, and a leak its replay releases says so. Default: none read.
   */
  deletionQueue?: string;
}

const timer = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads the cluster (no lock, no write) and runs every check.
 * @throws transport errors (UnavailableError when the API server cannot be reached)
 */
export async function runAudit(ds: Datastore, options: AuditOptions = {}): Promise<AuditResult> {
  const { progress, confirmAfterMs = 0, sleep = timer } = options;
  const snapshot = await takeSnapshot(ds, options);
  const ipUsers = liveIPUsers(snapshot.pods, managedRanges(snapshot));
  const candidates = ownerFindings(snapshot, ipUsers);
  const ipChecks = podIPProblems(snapshot, ipUsers);
  let owners: OwnerFinding[] = [];
  let unallocated: Problem[] = [];
  const waitMs = candidates.length > 0 ? confirmAfterMs : 0;
  if (waitMs > 0) {
    options.onConfirmWait?.(candidates.length, waitMs);
    await sleep(waitMs);
  }
  if (candidates.length > 0 || ipChecks.candidates.length > 0) {
    const again = await relistBlocks(ds, progress);
    snapshot.resourceVersions['ipamblocks (confirmation)'] = again.resourceVersion;
    owners = stillHeld(candidates, again.items);
    unallocated = await confirmUnallocated(
      ds,
      { blocks: again.items, pools: snapshot.pools, nodeAdoption: snapshot.nodeAdoption },
      ipChecks.candidates,
    );
  }
  // read last: a leak confirmed held is explained by what is queued now
  const queue =
    options.deletionQueue === undefined
      ? undefined
      : deletionQueueView(options.deletionQueue, readDeletionQueue(options.deletionQueue));
  if (queue) owners = noteQueuedLeaks(owners, queue);
  const problems = [
    ...frozenBlockProblems(snapshot),
    ...duplicateAddresses(snapshot.blocks),
    ...ignoredBlockProblems(snapshot),
    ...poolOverlapProblems(snapshot),
    ...invariantProblems(snapshot),
    ...managedFieldsProblems(snapshot),
    ...affinityProblems(snapshot),
    ...owners.map((f) => f.problem),
    ...ipChecks.problems,
    ...unallocated,
    ...(queue ? queuedDelProblems(queue, snapshot.blocks) : []),
  ];
  const order = Object.keys(PROBLEM_KINDS) as ProblemKind[];
  problems.sort(
    (a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || a.message.localeCompare(b.message),
  );
  const counts = {
    pools: snapshot.pools.length,
    blocks: snapshot.blocks.length,
    allocations: snapshot.blocks.reduce((n, b) => n + Object.keys(b.spec.allocations).length, 0),
    nodes: snapshot.nodes.size,
    pods: snapshot.pods.length,
  };
  const leaked = owners.flatMap((f) => (f.leak ? [f.leak] : []));
  const confirmation = {
    afterSeconds: waitMs / 1000,
    suspects: candidates.length,
    released: candidates.length - owners.length,
  };
  return { snapshot, counts, problems, leaked, confirmation, ...(queue ? { deletionQueue: queue } : {}) };
}

/** The findings whose allocation `blocks` (the confirmation LIST) still holds unchanged. */
function stillHeld(findings: readonly OwnerFinding[], blocks: readonly IPAMBlock[]): OwnerFinding[] {
  const held = new Set<string>();
  for (const block of blocks)
    for (const [key, a] of Object.entries(block.spec.allocations))
      held.add(
        leakKey({ block: block.metadata.name, ordinal: Number(key), handle: a.handle, sequence: a.sequence }),
      );
  return findings.filter((f) => held.has(leakKey(f.allocation)));
}

async function confirmUnallocated(
  ds: Datastore,
  where: Parameters<typeof unallocatedProblem>[1],
  candidates: readonly UnallocatedCandidate[],
): Promise<Problem[]> {
  const allocated = allocatedAddresses(where.blocks);
  const out: Problem[] = [];
  for (const candidate of candidates.filter((c) => !allocated.has(c.address))) {
    const { namespace, name, uid } = candidate.pod.metadata;
    const now = await ds.getPod(namespace ?? '', name);
    if (
      now &&
      now.metadata.uid === uid &&
      !now.metadata.deletionTimestamp &&
      isLivePod(now) &&
      podIPs(now).includes(candidate.address)
    )
      out.push(unallocatedProblem(candidate, where));
  }
  return out;
}

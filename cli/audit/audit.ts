/**
 * The whole audit: snapshot → every check → problems, leaked allocations, counts. The one step
 * that reads again is the confirmation of "pod IP with no allocation" candidates (a pod's IP is
 * set after its allocation, so a block LIST taken BEFORE the pod LIST can miss a fresh
 * allocation): the blocks are listed again and each candidate pod re-read; only a pod that still
 * has the IP, with the same UID, while the later block LIST shows no allocation, is reported.
 */
import type { KubeDatastore } from '../../core/index.ts';
import {
  affinityProblems,
  blocksOutsidePools,
  duplicateAddresses,
  invariantProblems,
  overlapProblems,
} from './block-checks.ts';
import {
  allocatedAddresses,
  isLivePod,
  leakProblems,
  liveIPUsers,
  managedRanges,
  podIPs,
  podIPProblems,
  unallocatedProblem,
} from './owner-checks.ts';
import type { UnallocatedCandidate } from './owner-checks.ts';
import { PROBLEM_KINDS } from './problems.ts';
import type { LeakedAllocation, Problem, ProblemKind } from './problems.ts';
import { relistBlocks, takeSnapshot } from './snapshot.ts';
import type { Progress, Snapshot } from './snapshot.ts';

/** Object counts of the snapshot. */
export interface AuditCounts {
  pools: number;
  blocks: number;
  allocations: number;
  nodes: number;
  pods: number;
}

/** Result of {@link runAudit}. `problems` are sorted by kind (PROBLEM_KINDS order), then message. */
export interface AuditResult {
  snapshot: Snapshot;
  counts: AuditCounts;
  problems: Problem[];
  leaked: LeakedAllocation[];
}

/**
 * Reads the cluster (no lock, no write) and runs every check.
 * @throws transport errors (UnavailableError when the API server cannot be reached)
 */
export async function runAudit(
  ds: KubeDatastore,
  progress?: Progress,
  nowMs: number = Date.now(),
): Promise<AuditResult> {
  const snapshot = await takeSnapshot(ds.transport, progress, nowMs);
  const ipUsers = liveIPUsers(snapshot.pods, managedRanges(snapshot));
  const leaks = leakProblems(snapshot, ipUsers);
  const ipChecks = podIPProblems(snapshot, ipUsers);
  const confirmed = await confirmUnallocated(ds, snapshot, ipChecks.candidates, progress);
  const problems = [
    ...duplicateAddresses(snapshot.blocks),
    ...overlapProblems(snapshot),
    ...blocksOutsidePools(snapshot),
    ...invariantProblems(snapshot),
    ...affinityProblems(snapshot),
    ...leaks.problems,
    ...ipChecks.problems,
    ...confirmed,
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
  return { snapshot, counts, problems, leaked: leaks.leaked };
}

async function confirmUnallocated(
  ds: KubeDatastore,
  snapshot: Snapshot,
  candidates: readonly UnallocatedCandidate[],
  progress?: Progress,
): Promise<Problem[]> {
  if (candidates.length === 0) return [];
  const again = await relistBlocks(ds.transport, progress);
  snapshot.resourceVersions['ipamblocks (confirmation)'] = again.resourceVersion;
  const allocated = allocatedAddresses(again.items);
  const out: Problem[] = [];
  for (const candidate of candidates.filter((c) => !allocated.has(c.address))) {
    const { namespace, name, uid } = candidate.pod.metadata;
    const now = await ds.getPod(namespace ?? '', name);
    if (now && now.metadata.uid === uid && isLivePod(now) && podIPs(now).includes(candidate.address))
      out.push(unallocatedProblem(candidate));
  }
  return out;
}

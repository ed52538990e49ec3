/**
 * Checks of allocations against their owners and of pod IPs against allocations (docs/design-cli.md §What it reports).
 * Identity is handle + pod UID, never the pod name: an allocation is leaked when its
 * pod is gone, when a pod of that name now has another UID, or (for a pod-less allocation) when
 * its node is gone — unless its address is some live pod's IP, which is then reported instead
 * and never offered for release. An allocation whose pod object (same UID) still exists is never
 * leaked; if its node is gone it is reported as `pod-on-deleted-node`. Pure functions of the
 * snapshot.
 */
import { cidrContains, isLivePod, parseIP, podIPs } from 'blockipam/core';
import type { Allocation, Cidr, IPAMBlock } from 'blockipam/core';
import { importHint, pendingAdoption } from './adoption-checks.ts';
import type { AdoptionView } from './adoption-checks.ts';
import { allocationsIn, ranged } from './block-checks.ts';
import { problem } from './problems.ts';
import type { LeakedAllocation, LeakReason, Problem } from './problems.ts';
import type { AuditPod, Snapshot } from './snapshot.ts';

function podName(pod: AuditPod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
}

/** Canonical address → live pods using it, for addresses inside `ranges`. */
export function liveIPUsers(pods: readonly AuditPod[], ranges: readonly Cidr[]): Map<string, AuditPod[]> {
  const users = new Map<string, AuditPod[]>();
  for (const pod of pods) {
    if (!isLivePod(pod)) continue;
    for (const text of podIPs(pod)) {
      const ip = parseIP(text);
      if (!ip || !ranges.some((r) => cidrContains(r, ip))) continue;
      const list = users.get(text);
      if (list) list.push(pod);
      else users.set(text, [pod]);
    }
  }
  return users;
}

/** The address ranges blockipam manages: every pool and every block. */
export function managedRanges(snapshot: Snapshot): Cidr[] {
  return ranged([...snapshot.pools, ...snapshot.blocks]).map((r) => r.cidr);
}

/**
 * What the owner check finds for one allocation: a leak reason, 'pod-on-deleted-node' (the node
 * is gone but the pod object — same UID — still exists: never leaked while it does), or
 * undefined when the owner is there. The one owner-gone rule: the audit applies it to its
 * snapshot, `release` (cli/release/plan.ts) to fresh reads of the one owner.
 */
export function ownerVerdict(
  allocation: Readonly<Pick<Allocation, 'node' | 'namespace' | 'pod' | 'podUID'>>,
  pods: ReadonlyMap<string, AuditPod>,
  nodes: ReadonlySet<string>,
): LeakReason | 'pod-on-deleted-node' | undefined {
  const nodeGone = !nodes.has(allocation.node);
  if (allocation.namespace && allocation.pod) {
    const pod = pods.get(`${allocation.namespace}/${allocation.pod}`);
    if (!pod) return 'leaked-pod-deleted';
    if (allocation.podUID && pod.metadata.uid !== allocation.podUID) return 'leaked-pod-uid';
    return nodeGone ? 'pod-on-deleted-node' : undefined;
  }
  return nodeGone ? 'leaked-node-deleted' : undefined;
}

function leakMessage(leak: LeakedAllocation, verdict: LeakReason | 'pod-on-deleted-node'): string {
  const owner = leak.pod
    ? `pod ${leak.namespace}/${leak.pod} (uid ${leak.podUID ?? '?'})`
    : `handle ${leak.handle}`;
  const why = {
    'leaked-pod-deleted': 'the pod no longer exists',
    'leaked-pod-uid': 'a pod of that name exists with another UID',
    'leaked-node-deleted': `node ${leak.node} no longer exists`,
    'pod-on-deleted-node': `node ${leak.node} no longer exists, but the pod object still does: not offered for release while it exists`,
  }[verdict];
  return `${leak.address} (IPAMBlock ${leak.block}, handle ${leak.handle}, sequence ${leak.sequence}) is held by ${owner} on node ${leak.node}: ${why}`;
}

/**
 * One owner-check finding about one allocation; `leak` is set when it may be released. Findings
 * are candidates until audit.ts confirms the allocation against a block LIST taken after the
 * pod and node LISTs.
 */
export interface OwnerFinding {
  problem: Problem;
  /** The allocation the finding is about (its key: block + ordinal + handle + sequence). */
  allocation: LeakedAllocation;
  leak?: LeakedAllocation;
}

/** The allocation at `ordinal` of `blockName` as a report entry (used by check and release). */
export function entryOf(
  blockName: string,
  address: string,
  ordinal: number,
  allocation: Allocation,
  reason: LeakedAllocation['reason'],
): LeakedAllocation {
  const { handle, sequence, node, namespace, pod, podUID, allocatedAt } = allocation;
  return {
    address,
    block: blockName,
    ordinal,
    handle,
    sequence,
    node,
    namespace,
    pod,
    podUID,
    allocatedAt,
    reason,
  };
}

/**
 * Leaked allocations (with the problems naming them), allocations whose node is gone while their
 * pod object exists, and leaked allocations whose address a live pod uses (never releasable).
 */
export function ownerFindings(snapshot: Snapshot, ipUsers: ReadonlyMap<string, AuditPod[]>): OwnerFinding[] {
  const pods = new Map(snapshot.pods.map((pod) => [podName(pod), pod]));
  return allocationsIn(snapshot.blocks).flatMap(({ block, ordinal, address, allocation }): OwnerFinding[] => {
    const verdict = ownerVerdict(allocation, pods, snapshot.nodes);
    if (!verdict) return [];
    const reason = verdict === 'pod-on-deleted-node' ? 'leaked-node-deleted' : verdict;
    const entry = entryOf(block.metadata.name, address, ordinal, allocation, reason);
    const users = verdict === 'pod-on-deleted-node' ? undefined : ipUsers.get(address);
    if (users?.length) {
      const message = `${leakMessage(entry, verdict)}; but pod ${users.map(podName).join(', ')} uses ${address}: not offered for release`;
      const objects = [`IPAMBlock/${entry.block}`, ...users.map((u) => `Pod/${podName(u)}`)];
      return [{ problem: problem('ip-in-use-by-other-pod', message, objects), allocation: entry }];
    }
    const podObject = entry.pod ? [`Pod/${entry.namespace ?? ''}/${entry.pod}`] : [];
    const objects = [`IPAMBlock/${entry.block}`, ...podObject, `Node/${entry.node}`];
    const found = { problem: problem(verdict, leakMessage(entry, verdict), objects), allocation: entry };
    return [verdict === 'pod-on-deleted-node' ? found : { ...found, leak: entry }];
  });
}

/** The canonical addresses `blocks` allocate. */
export function allocatedAddresses(blocks: readonly IPAMBlock[]): Set<string> {
  return new Set(allocationsIn(blocks).map((h) => h.address));
}

/** A live pod IP in a managed range with no allocation: a candidate, confirmed by audit.ts. */
export interface UnallocatedCandidate {
  address: string;
  pod: AuditPod;
}

/**
 * Pod IPs nobody allocated (candidates), pod IPs used by more than one live pod, and, per node not
 * opted in to adoption, the pod IPs host-local still holds there (`adoption-pending`: adoption-checks.ts,
 * not candidates).
 */
export function podIPProblems(
  snapshot: Snapshot,
  ipUsers: ReadonlyMap<string, AuditPod[]>,
): { problems: Problem[]; candidates: UnallocatedCandidate[] } {
  const allocated = allocatedAddresses(snapshot.blocks);
  const problems: Problem[] = [];
  const candidates: UnallocatedCandidate[] = [];
  for (const [address, users] of ipUsers) {
    if (users.length > 1)
      problems.push(
        problem(
          'duplicate-pod-ip',
          `${address} is the IP of ${users.length} live pods: ${users.map(podName).join(', ')}`,
          users.map((u) => `Pod/${podName(u)}`),
        ),
      );
    // A terminating pod's address is released (CNI DEL) before the pod object goes, while
    // status.podIP stays: no allocation is then expected.
    if (!allocated.has(address))
      for (const pod of users.filter((u) => !u.metadata.deletionTimestamp)) candidates.push({ address, pod });
  }
  const pending = pendingAdoption(candidates, snapshot);
  return { problems: [...problems, ...pending.problems], candidates: pending.candidates };
}

/**
 * The problem for a confirmed unallocated pod IP, saying whether a block covers the address
 * (it does not record it) or none does (its block is gone: deleted, or wiped by the garbage
 * collector through ownerReferences), and what to do: the address may be handed out twice. On a
 * node opted in to adoption, in a podCIDR pool, the hint names the agent's import first.
 * @param where the blocks of the confirmation LIST, the snapshot's pools and Nodes
 */
export function unallocatedProblem(candidate: UnallocatedCandidate, where: AdoptionView): Problem {
  const pod = candidate.pod;
  const ip = parseIP(candidate.address);
  const covers = (cidr: Cidr): boolean => ip !== undefined && cidrContains(cidr, ip);
  const block = ranged(where.blocks).find((b) => covers(b.cidr));
  const pool = ranged(where.pools).find((p) => covers(p.cidr));
  const why = block
    ? `IPAMBlock ${block.name} covers it and does not record it`
    : `no IPAMBlock covers it${pool ? ` in IPPool ${pool.name}` : ''} (its block is gone: deleted, or removed by the garbage collector through ownerReferences)`;
  const name = pod.metadata.name;
  const namespace = pod.metadata.namespace ?? '';
  return problem(
    'pod-ip-unallocated',
    `pod ${podName(pod)} (uid ${pod.metadata.uid ?? '?'}, node ${pod.spec?.nodeName ?? '?'}) has IP ${candidate.address}, which no IPAMBlock allocates: ${why}`,
    [`Pod/${podName(pod)}`, ...(block ? [`IPAMBlock/${block.name}`] : [])],
    `${importHint(candidate, where) ?? ''}${candidate.address} may be handed out twice: the allocator can give it to another pod (${block ? `its ordinal is free in IPAMBlock ${block.name}` : 'any node can claim its block again'}); restart the pod so it gets a recorded address (kubectl delete pod -n ${namespace} ${name}: its controller re-creates it), and find who removed the record in the API server's audit log`,
  );
}

/**
 * What `ipamctl release` may free, decided twice: from the reports (only allocations EVERY report
 * calls leaked, keyed by block + ordinal + handle + sequence number) and again from the cluster
 * as it is now: the block still holds that handle and sequence number at that ordinal, and the
 * owner THE BLOCK records (pod + UID, or node for a pod-less allocation) is gone, and no live pod
 * has the address as its IP. A report's owner fields are never trusted. The write carries
 * handle + sequence-number + the block's pod UID as preconditions, so even a change after this
 * re-check cannot make it free a newer allocation (docs/design-cli.md §Release safety). An
 * allocation on a reserved ordinal (a corrupt block) is no exception: core's release removes it
 * and never lists a reserved ordinal in `freed`.
 */
import { addressTextAt, isLivePod, parseCidr } from 'blockipam/core';
import type { Datastore } from 'blockipam/core';
import { entryOf, ownerVerdict } from '../audit/owner-checks.ts';
import type { AuditPod } from '../audit/snapshot.ts';
import { leakKey } from '../audit/problems.ts';
import type { LeakedAllocation } from '../audit/problems.ts';
import type { Report } from '../audit/report.ts';
import { CliError } from '../io.ts';

/** An allocation to release, with the evidence. */
export interface Candidate {
  /** With no skip: the allocation as its block records it (owner fields from the block). */
  leak: LeakedAllocation;
  /** Why it is NOT released (undefined: it will be). */
  skip?: string;
}

/**
 * The allocations every report calls leaked.
 * @throws CliError when the reports come from different clusters, or not from `clusterUID`
 */
export function leakedInEveryReport(
  reports: readonly { path: string; report: Report }[],
  clusterUID: string,
): LeakedAllocation[] {
  for (const { path, report } of reports) {
    if (report.cluster.kubeSystemUID !== clusterUID) {
      throw new CliError(
        `${path} was taken on another cluster (kube-system uid ${report.cluster.kubeSystemUID} at ${report.cluster.server}); this cluster's is ${clusterUID}. Nothing was released.`,
      );
    }
  }
  const [first, ...rest] = reports;
  if (!first) return [];
  const keysOf = (r: Report): Set<string> => new Set(r.leaked.map(leakKey));
  const others = rest.map((r) => keysOf(r.report));
  return first.report.leaked.filter((leak) => others.every((keys) => keys.has(leakKey(leak))));
}

/** Live pods whose status.podIP is `address` (1 LIST with a field selector). */
async function livePodsWithIP(ds: Datastore, address: string): Promise<AuditPod[]> {
  return (await ds.listPods({ podIP: address })).filter(isLivePod);
}

/**
 * Re-checks one report entry against the cluster now (1 GET of the block, ≤ 1 GET of the pod,
 * ≤ 1 GET of the node, 1 pod LIST by IP). The entry only names an allocation — block + ordinal +
 * handle + sequence number; its address must be that ordinal's. Its owner (pod, pod UID, node) is
 * read from the block, never from the entry: a hand-edited report cannot make a live pod's
 * allocation look leaked.
 * @returns the allocation as the block records it (what the write's preconditions carry), or why
 *   it must not be released
 */
async function recheck(
  ds: Datastore,
  entry: LeakedAllocation,
): Promise<{ leak: LeakedAllocation } | { skip: string }> {
  const block = await ds.blocks.get(entry.block);
  const allocation = block?.spec.allocations[String(entry.ordinal)];
  if (!block || !allocation || allocation.handle !== entry.handle || allocation.sequence !== entry.sequence)
    return {
      skip: 'no longer allocated with that handle and sequence number (released or re-allocated since the report)',
    };
  const cidr = parseCidr(block.spec.cidr);
  if (!cidr || addressTextAt(cidr, entry.ordinal) !== entry.address)
    return {
      skip: `${entry.address} is not ordinal ${entry.ordinal} of IPAMBlock ${entry.block} (${block.spec.cidr}): an edited or corrupt report`,
    };
  const leak = entryOf(entry.block, entry.address, entry.ordinal, allocation, entry.reason);
  const alive = await ownerAlive(ds, leak);
  if (alive) return { skip: alive };
  const users = await livePodsWithIP(ds, leak.address);
  if (users.length > 0)
    return {
      skip: `live pod ${users.map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`).join(', ')} has this IP`,
    };
  return { leak };
}

/**
 * Why the owner recorded in the block is still there, or undefined when it is gone — the audit's
 * rule ({@link ownerVerdict}) on fresh reads: an allocation with a pod is leaked only when that
 * pod is missing or has another UID (whatever its node: its node is not read); a pod-less one only
 * when its node is missing.
 */
async function ownerAlive(ds: Datastore, owner: LeakedAllocation): Promise<string | undefined> {
  const pods = new Map<string, AuditPod>();
  const nodes = new Set<string>();
  if (owner.namespace && owner.pod) {
    const pod = await ds.getPod(owner.namespace, owner.pod);
    if (pod) pods.set(`${owner.namespace}/${owner.pod}`, pod);
    nodes.add(owner.node); // not read: a pod's allocation is judged by its pod alone
  } else if (await ds.getNode(owner.node)) nodes.add(owner.node);
  const verdict = ownerVerdict(owner, pods, nodes);
  if (verdict !== undefined && verdict !== 'pod-on-deleted-node') return undefined;
  return owner.namespace && owner.pod
    ? `its pod ${owner.namespace}/${owner.pod} exists${owner.podUID ? ` (uid ${owner.podUID})` : ''}`
    : `its node ${owner.node} exists`;
}

// 8 parallel re-checks: bounded so a release of thousands of leaks does not flood the API server.
const RECHECK_CONCURRENCY = 8;

/** Re-checks every leak (bounded concurrency), keeping the input order. */
export async function recheckAll(ds: Datastore, leaks: readonly LeakedAllocation[]): Promise<Candidate[]> {
  const out: Candidate[] = new Array<Candidate>(leaks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < leaks.length; i = next++) {
      const leak = leaks[i] as LeakedAllocation;
      const verdict = await recheck(ds, leak);
      out[i] = 'skip' in verdict ? { leak, skip: verdict.skip } : verdict;
    }
  };
  await Promise.all(Array.from({ length: Math.min(RECHECK_CONCURRENCY, leaks.length) }, worker));
  return out;
}

/**
 * What `ipamctl release` may free, decided twice: from the reports (only allocations EVERY report
 * calls leaked, keyed by block + address + handle + sequence number) and again from the cluster
 * as it is now (the allocation still holds that handle and sequence number, its pod has not come
 * back, its node has not come back, and no live pod has the address as its IP). The write itself
 * carries handle + sequence-number (+ pod UID) preconditions, so even a change after this
 * re-check cannot make it free a newer allocation (docs/design-cli.md §Release safety).
 */
import type { KubeDatastore } from '../../core/index.ts';
import { isLivePod } from '../audit/owner-checks.ts';
import type { AuditPod } from '../audit/snapshot.ts';
import { leakKey } from '../audit/problems.ts';
import type { LeakedAllocation } from '../audit/problems.ts';
import type { Report } from '../audit/report.ts';
import { CliError } from '../io.ts';

/** An allocation to release, with the evidence. */
export interface Candidate {
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
export async function livePodsWithIP(ds: KubeDatastore, address: string): Promise<AuditPod[]> {
  const list = await ds.transport.request<{ items?: AuditPod[] }>('GET', '/api/v1/pods', {
    query: { fieldSelector: `status.podIP=${address}` },
  });
  return (list.items ?? []).filter(isLivePod);
}

/**
 * Re-checks one allocation against the cluster now (1 GET of the block, ≤ 1 GET of the pod,
 * ≤ 1 GET of the node, 1 pod LIST by IP).
 * @returns why it must not be released, or undefined when it still is leaked
 */
export async function recheck(ds: KubeDatastore, leak: LeakedAllocation): Promise<string | undefined> {
  const block = await ds.blocks.get(leak.block);
  const allocation = block?.spec.allocations[String(leak.ordinal)];
  if (!allocation || allocation.handle !== leak.handle || allocation.sequence !== leak.sequence) {
    return 'no longer allocated with that handle and sequence number (released or re-allocated since the report)';
  }
  if (leak.namespace && leak.pod) {
    const pod = await ds.getPod(leak.namespace, leak.pod);
    if (pod && (!leak.podUID || pod.metadata.uid === leak.podUID))
      return `its pod ${leak.namespace}/${leak.pod} exists`;
  }
  if (leak.reason === 'leaked-node-deleted' && (await ds.getNode(leak.node)))
    return `node ${leak.node} exists again`;
  const users = await livePodsWithIP(ds, leak.address);
  if (users.length > 0)
    return `live pod ${users.map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`).join(', ')} has this IP`;
  return undefined;
}

// 8 parallel re-checks: bounded so a release of thousands of leaks does not flood the API server.
const RECHECK_CONCURRENCY = 8;

/** Re-checks every leak (bounded concurrency), keeping the input order. */
export async function recheckAll(
  ds: KubeDatastore,
  leaks: readonly LeakedAllocation[],
): Promise<Candidate[]> {
  const out: Candidate[] = new Array<Candidate>(leaks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < leaks.length; i = next++) {
      const leak = leaks[i] as LeakedAllocation;
      const skip = await recheck(ds, leak);
      out[i] = skip === undefined ? { leak } : { leak, skip };
    }
  };
  await Promise.all(Array.from({ length: Math.min(RECHECK_CONCURRENCY, leaks.length) }, worker));
  return out;
}

/**
 * Pod IPs of a cluster being adopted from host-local node by node (docs/design-adopt.md). Until a
 * Node is labelled `blockipam.io/adopt=true`, host-local serves its pods out of the node's podCIDR
 * and blockipam records none of their addresses: such an address is `adoption-pending`
 * (information, one finding per node), not `pod-ip-unallocated`. On an opted-in node the agent's
 * import records them; one it has not recorded stays `pod-ip-unallocated`, with a hint naming the
 * import. Pure functions of the snapshot.
 */
import { ADOPT_LABEL, cidrContains, isPodCIDRPool, parseCidr, parseIP } from 'blockipam/core';
import type { Cidr, IP, IPAMBlock, IPPool } from 'blockipam/core';
import { problem } from './problems.ts';
import type { Problem } from './problems.ts';
import type { AuditNode, AuditPod } from './snapshot.ts';

/** Addresses named in one `adoption-pending` finding; the count covers the rest. */
export const PENDING_SAMPLE = 5;

/** A live pod's IP with no allocation (owner-checks.ts' UnallocatedCandidate). */
interface PodAddress {
  address: string;
  pod: AuditPod;
}

/** What {@link pendingAdoption} reads of the snapshot. */
export interface AdoptionView {
  blocks: readonly IPAMBlock[];
  pools: readonly IPPool[];
  nodeAdoption: ReadonlyMap<string, AuditNode>;
}

const covering = (ip: IP, cidr: Cidr | undefined): boolean => cidr !== undefined && cidrContains(cidr, ip);

/** The podCIDR pools (`spec.podCIDRBlocks: true`) whose CIDR holds `ip`. */
function podCIDRPoolsOf(ip: IP, pools: readonly IPPool[]): IPPool[] {
  return pools.filter((p) => isPodCIDRPool(p) && covering(ip, parseCidr(p.spec.cidr)));
}

/**
 * The podCIDR pool host-local still serves `candidate`'s address out of: its pod's Node exists
 * and is not opted in, and the address lies in a podCIDR pool and in the node's podCIDR or in a
 * block affine to the node. Undefined otherwise — an opted-in node, a Node not listed, an address
 * of no podCIDR pool or outside the node's podCIDRs and blocks.
 */
export function pendingPool(candidate: PodAddress, view: AdoptionView): IPPool | undefined {
  const nodeName = candidate.pod.spec?.nodeName;
  const node = nodeName === undefined ? undefined : view.nodeAdoption.get(nodeName);
  const ip = parseIP(candidate.address);
  if (!node || node.optedIn || !ip) return undefined;
  const [pool] = podCIDRPoolsOf(ip, view.pools);
  if (!pool) return undefined;
  const ofNode =
    node.podCIDRs.some((cidr) => covering(ip, cidr)) ||
    view.blocks.some((b) => b.spec.affinity === nodeName && covering(ip, parseCidr(b.spec.cidr)));
  return ofNode ? pool : undefined;
}

/**
 * Splits unallocated pod IPs into those host-local still holds on nodes not opted in — one
 * `adoption-pending` finding per node, naming it, its count, the pools, the first
 * {@link PENDING_SAMPLE} addresses (in address order) with their pods, and the label to set — and
 * the rest (`candidates`, to confirm as `pod-ip-unallocated`).
 */
export function pendingAdoption<C extends PodAddress>(
  candidates: readonly C[],
  view: AdoptionView,
): { problems: Problem[]; candidates: C[] } {
  const byNode = new Map<string, { pools: Set<string>; addresses: C[] }>();
  const rest: C[] = [];
  for (const candidate of candidates) {
    const pool = pendingPool(candidate, view);
    const node = candidate.pod.spec?.nodeName;
    if (!pool || node === undefined) {
      rest.push(candidate);
      continue;
    }
    const entry = byNode.get(node) ?? { pools: new Set<string>(), addresses: [] };
    entry.pools.add(pool.metadata.name);
    entry.addresses.push(candidate);
    byNode.set(node, entry);
  }
  const problems = [...byNode].map(([node, { pools, addresses }]) => {
    const sorted = addresses.toSorted(byAddress);
    const shown = sorted.slice(0, PENDING_SAMPLE);
    const more = sorted.length > shown.length ? `, … ${sorted.length - shown.length} more` : '';
    const poolNames = [...pools].sort();
    return problem(
      'adoption-pending',
      `node ${node} is not adopted yet (no ${ADOPT_LABEL}=true): host-local still holds the IPs of its pods in podCIDR pool ${poolNames.join(', ')} — ${sorted.length} pod IP(s) no IPAMBlock allocates: ${shown.map((c) => `${c.address} (${podName(c.pod)})`).join(', ')}${more}`,
      [`Node/${node}`, ...poolNames.map((p) => `IPPool/${p}`), ...shown.map((c) => `Pod/${podName(c.pod)}`)],
      `when ipamctl adopt plan --node ${node} shows no conflict: kubectl label node ${node} ${ADOPT_LABEL}=true (its agent then records these addresses from host-local's store)`,
    );
  });
  return { problems, candidates: rest };
}

/**
 * The part of a `pod-ip-unallocated` hint that names the agent's import: when the address lies
 * in a podCIDR pool and its pod's node is opted in, the import should have recorded it from
 * host-local's store. Ends in "Until it is recorded, " (the general hint follows). Undefined otherwise.
 */
export function importHint(candidate: PodAddress, view: AdoptionView): string | undefined {
  const nodeName = candidate.pod.spec?.nodeName;
  const node = nodeName === undefined ? undefined : view.nodeAdoption.get(nodeName);
  const ip = parseIP(candidate.address);
  if (!node?.optedIn || !ip) return undefined;
  const [pool] = podCIDRPoolsOf(ip, view.pools);
  if (!pool) return undefined;
  return `node ${nodeName} is adopted (${ADOPT_LABEL}=true) and IPPool ${pool.metadata.name} is a podCIDR pool: its agent's import should have recorded ${candidate.address} from host-local's store — blockipam_agent_host_local_files{state="pending"} above 0 on that agent is a file not matched yet, quarantined once unmatched for the grace period (--host-local-grace-seconds, default 120 s): run check again after it. Until it is recorded, `;
}

function podName(pod: AuditPod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
}

/** Address order: family, then value; an address that does not parse last, by text. */
function byAddress(a: PodAddress, b: PodAddress): number {
  const x = parseIP(a.address);
  const y = parseIP(b.address);
  if (!x || !y) return x ? -1 : y ? 1 : a.address.localeCompare(b.address);
  return x.family - y.family || (x.value < y.value ? -1 : x.value > y.value ? 1 : 0);
}

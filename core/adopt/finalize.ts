/**
 * Whether adoption mode may be switched off (pure; `ipamctl adopt finalize`, docs/design-cli.md
 * §adopt finalize): once it is, every agent writes its conflist on every node and no agent reads
 * host-local's store, so a node still on host-local, or a pod address its agent has not imported
 * yet, would be handed out a second time. The same objects give the same verdict.
 */
import { addressTextAt, blockOrdinals } from '../address/block-cidr.ts';
import { cidrContains, cidrsOverlap, formatCidr, parseCidr, parseIP } from '../address/ip.ts';
import type { Cidr, IP } from '../address/ip.ts';
import { isLivePod, podIPs } from '../allocator/pod-liveness.ts';
import { isPodCIDRPool } from '../allocator/pools.ts';
import type { IPAMBlock, IPPool, Pod } from '../resources.ts';
import { ADOPT_LABEL, isAdoptionOptedIn } from './opt-in.ts';
import { podCIDRsOf } from './podcidr.ts';
import type { PodCIDRNode } from './podcidr.ts';

/** What the verdict reads: every Node, Pod, IPPool and IPAMBlock, as listed. */
export interface FinalizeInput {
  readonly nodes: readonly PodCIDRNode[];
  readonly pods: readonly Pod[];
  readonly pools: readonly IPPool[];
  readonly blocks: readonly IPAMBlock[];
}

/** A Node with a podCIDR in a podCIDR pool that is not opted in: host-local still serves it. */
export interface NodeNotAdopted {
  readonly node: string;
  /** Its podCIDRs that overlap a podCIDR pool (canonical text). */
  readonly podCIDRs: readonly string[];
  /** Those pools' names, sorted. */
  readonly pools: readonly string[];
  /** `kubectl label node NODE blockipam.io/adopt=true`. */
  readonly fix: string;
}

/** A live pod's address in a podCIDR pool that no IPAMBlock allocates. */
export interface UnrecordedAddress {
  /** Canonical text. */
  readonly address: string;
  readonly namespace: string;
  readonly pod: string;
}

/**
 * The unrecorded addresses of the pods bound to one node. `state`: `adopted` (opted in: its agent
 * has not imported them yet), `not-adopted` (host-local still holds them), `no-node` (the pods are
 * bound to a node with no Node object).
 */
export interface UnrecordedPodIPs {
  readonly node: string;
  readonly state: 'adopted' | 'not-adopted' | 'no-node';
  /** In address order (IPv4 first). */
  readonly addresses: readonly UnrecordedAddress[];
  /** The next step for this node. */
  readonly fix: string;
}

/** What stops switching adoption mode off. */
export interface FinalizeBlockers {
  /** Names of the pools with `spec.podCIDRBlocks: true`, sorted; none: nothing was adopted. */
  readonly podCIDRPools: readonly string[];
  /** Nodes with a podCIDR overlapping a podCIDR pool, opted in or not. */
  readonly nodes: number;
  /** Addresses of live pods in podCIDR pools, recorded or not. */
  readonly addresses: number;
  /** Nodes not opted in, by name. */
  readonly notAdopted: readonly NodeNotAdopted[];
  /** Per node (by name), live pods' addresses in podCIDR pools that no IPAMBlock allocates. */
  readonly unrecorded: readonly UnrecordedPodIPs[];
}

/** Whether adoption mode may be switched off: a podCIDR pool exists and nothing blocks. */
export function isReadyToFinalize(blockers: FinalizeBlockers): boolean {
  return (
    blockers.podCIDRPools.length > 0 && blockers.notAdopted.length === 0 && blockers.unrecorded.length === 0
  );
}

/**
 * What stops switching adoption mode off: every Node whose podCIDR (core's podCIDRsOf) overlaps a
 * podCIDR pool (core's isPodCIDRPool) must be opted in (isAdoptionOptedIn), and every address of
 * a live pod (isLivePod: not host-network, not Succeeded / Failed; a terminating pod counts until
 * it is gone) that lies in a podCIDR pool must be allocated in some IPAMBlock (any handle). Pods
 * with no `spec.nodeName` are skipped (they have no address). Never throws on cluster content: an
 * unparsable CIDR, address or ordinal is skipped.
 */
export function finalizeBlockers(input: FinalizeInput): FinalizeBlockers {
  const pools = input.pools.flatMap((pool) => {
    const cidr = isPodCIDRPool(pool) ? parseCidr(pool.spec.cidr, { strict: false }) : undefined;
    return cidr ? [{ name: pool.metadata.name, cidr }] : [];
  });
  const poolsOver = (cidr: Cidr): string[] =>
    pools.filter((p) => cidrsOverlap(p.cidr, cidr)).map((p) => p.name);
  const nodes = [...input.nodes].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const notAdopted = nodes.flatMap((node): NodeNotAdopted[] => {
    if (isAdoptionOptedIn(node)) return [];
    const over = podCIDRsOf(node).filter((cidr) => poolsOver(cidr).length > 0);
    if (over.length === 0) return [];
    const name = node.metadata.name;
    return [
      {
        node: name,
        podCIDRs: over.map(formatCidr),
        pools: [...new Set(over.flatMap(poolsOver))].sort(),
        fix: `kubectl label node ${name} ${ADOPT_LABEL}=true`,
      },
    ];
  });
  const inPools = nodes.filter((n) => podCIDRsOf(n).some((cidr) => poolsOver(cidr).length > 0)).length;
  const allocated = allocatedAddresses(input.blocks);
  let addresses = 0;
  const byNode = new Map<string, { address: UnrecordedAddress; ip: IP }[]>();
  for (const pod of input.pods) {
    const node = pod.spec?.nodeName;
    if (!node || !isLivePod(pod)) continue;
    for (const address of podIPs(pod)) {
      const ip = parseIP(address);
      if (!ip || !pools.some((p) => cidrContains(p.cidr, ip))) continue;
      addresses++;
      if (allocated.has(address)) continue;
      const entry = {
        address: { address, namespace: pod.metadata.namespace ?? '', pod: pod.metadata.name },
        ip,
      };
      const list = byNode.get(node);
      if (list) list.push(entry);
      else byNode.set(node, [entry]);
    }
  }
  const known = new Map(nodes.map((n) => [n.metadata.name, n]));
  const unrecorded = [...byNode]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, entries]): UnrecordedPodIPs => {
      const object = known.get(node);
      const state = !object ? 'no-node' : isAdoptionOptedIn(object) ? 'adopted' : 'not-adopted';
      const addresses = entries
        .sort(
          (a, b) =>
            a.ip.family - b.ip.family || (a.ip.value < b.ip.value ? -1 : a.ip.value > b.ip.value ? 1 : 0),
        )
        .map((e) => e.address);
      return { node, state, addresses, fix: fixFor(node, state) };
    });
  return { podCIDRPools: pools.map((p) => p.name).sort(), nodes: inPools, addresses, notAdopted, unrecorded };
}

function fixFor(node: string, state: UnrecordedPodIPs['state']): string {
  switch (state) {
    case 'adopted':
      return `wait for the agent's import on node ${node}: blockipam_agent_host_local_files{node="${node}",state="pending"} falls to 0 (an entry it cannot import is state="conflict", named in the agent's log)`;
    case 'not-adopted':
      return `kubectl label node ${node} ${ADOPT_LABEL}=true; its agent then imports them from host-local's store`;
    case 'no-node':
      return `node ${node} has no Node object: wait until its pods are deleted (the pod garbage collector), or kubectl delete pod -n NAMESPACE NAME`;
  }
}

/** The canonical addresses `blocks` allocate; a block whose CIDR does not parse, or an ordinal outside it, is skipped. */
function allocatedAddresses(blocks: readonly IPAMBlock[]): Set<string> {
  const addresses = new Set<string>();
  for (const block of blocks) {
    const cidr = parseCidr(block.spec.cidr);
    if (!cidr) continue;
    const size = blockOrdinals(cidr);
    for (const key of Object.keys(block.spec.allocations)) {
      const ordinal = Number(key);
      if (Number.isInteger(ordinal) && ordinal >= 0 && ordinal < size)
        addresses.add(addressTextAt(cidr, ordinal));
    }
  }
  return addresses;
}

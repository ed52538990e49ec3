/**
 * The adoption plan (pure): for each node of a cluster whose pods got their addresses from
 * host-local out of the node's podCIDR, what blockipam would hold — the pool and blocks of each
 * podCIDR, the block and ordinal of each pod address — and every conflict that stops keeping
 * those addresses in place. The same objects give the same plan.
 */
import { cidrContains, cidrLast, formatCidr, parseCidr, parseIP } from '../address/ip.ts';
import type { Cidr, IP } from '../address/ip.ts';
import { isLivePod, podIPs } from '../allocator/pod-liveness.ts';
import { snapshotOf } from '../allocator/pools.ts';
import type { IPAMBlock, IPPool, IPReservation, Pod } from '../resources.ts';
import {
  ADOPTION_CONFLICT_KINDS,
  duplicateAddress,
  outsidePodCIDR,
  overlappingPodCIDR,
  reservedAddress,
  reservedOrdinal,
} from './conflicts.ts';
import type { AdoptionConflict, AdoptionNote } from './conflicts.ts';
import { blocksByAddress, planPodCIDR } from './podcidr-plan.ts';
import type { Holder, PlanContext, PodCIDRPlan } from './podcidr-plan.ts';
import { coveringCidr, podCIDRsOf, tilePlace } from './podcidr.ts';
import type { PodCIDRNode } from './podcidr.ts';

/** What a plan reads: every Node, Pod, IPPool, IPAMBlock and IPReservation, as listed. */
export interface AdoptionInput {
  readonly nodes: readonly PodCIDRNode[];
  readonly pods: readonly Pod[];
  readonly pools: readonly IPPool[];
  readonly blocks: readonly IPAMBlock[];
  readonly reservations: readonly IPReservation[];
}

/** One pod address and where blockipam would record it. */
export interface PodAddressPlan {
  /** Canonical text. */
  readonly address: string;
  readonly namespace: string;
  readonly pod: string;
  /** The node's podCIDR holding it; absent when outside all of them. */
  readonly podCIDR?: string;
  /** The IPAMBlock (name) and ordinal it lands on; absent without a pool that tiles the podCIDR. */
  readonly block?: string;
  readonly ordinal?: number;
}

/** One node's plan. */
export interface NodeAdoptionPlan {
  readonly node: string;
  readonly podCIDRs: readonly PodCIDRPlan[];
  /** Every address of its live pods, sorted by address (IPv4 first). */
  readonly addresses: readonly PodAddressPlan[];
  /** How many of {@link AdoptionPlan.conflicts} name this node. */
  readonly conflicts: number;
}

/** The plan: nodes by name; conflicts in ADOPTION_CONFLICT_KINDS order, then by node; notes. */
export interface AdoptionPlan {
  readonly nodes: readonly NodeAdoptionPlan[];
  readonly conflicts: readonly AdoptionConflict[];
  readonly notes: readonly AdoptionNote[];
}

/** The podCIDRs of one node with their plans, as placeAddress reads them. */
interface NodePodCIDRs {
  readonly node: string;
  readonly cidrs: readonly Cidr[];
  readonly plans: readonly PodCIDRPlan[];
}

/**
 * Plans adopting every node of `input.nodes`. A pod counts when it is live (core's isLivePod:
 * not host-network, not Succeeded / Failed), bound to a node (`spec.nodeName`) and has addresses
 * (`status.podIPs`, `status.podIP`); live pods bound to a node with no Node object are a
 * `no-node` note. Never throws on cluster content: an unparsable CIDR or address is skipped.
 */
export function planAdoption(input: AdoptionInput): AdoptionPlan {
  const nodes = [...input.nodes].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const podCIDRs = nodes.flatMap((n) => podCIDRsOf(n).map((cidr) => ({ node: n.metadata.name, cidr })));
  const byNode = podsByNode(input.pods);
  const context = contextOf(input, podCIDRs, byNode);
  const reservations = reservationsOf(input.reservations);
  const conflicts: AdoptionConflict[] = [...podCIDROverlaps(podCIDRs), ...duplicates(context)];
  const notes: AdoptionNote[] = [];
  const plans = nodes.map((node) => {
    const name = node.metadata.name;
    const cidrs = podCIDRsOf(node);
    const verdicts = cidrs.map((cidr) => planPodCIDR(context, node, cidr));
    conflicts.push(...verdicts.flatMap((v) => v.conflicts));
    notes.push(...verdicts.flatMap((v) => v.notes));
    const pods = byNode.get(name) ?? [];
    if (cidrs.length === 0 && pods.length === 0)
      notes.push({
        kind: 'no-podcidr',
        node: name,
        message: `node ${name} has no podCIDR and no pod address: nothing to adopt`,
      });
    const own = { node: name, cidrs, plans: verdicts.map((v) => v.plan) };
    const placed = pods.flatMap((pod) =>
      pod.addresses.map((address) => placeAddress({ own, podCIDRs, reservations }, pod, address)),
    );
    conflicts.push(...placed.flatMap((p) => p.conflicts));
    placed.sort(
      (a, b) => a.ip.family - b.ip.family || (a.ip.value < b.ip.value ? -1 : a.ip.value > b.ip.value ? 1 : 0),
    );
    return { node: name, podCIDRs: own.plans, addresses: placed.map((p) => p.plan) };
  });
  const known = new Set(nodes.map((n) => n.metadata.name));
  for (const [node, pods] of byNode)
    if (!known.has(node))
      notes.push({
        kind: 'no-node',
        node,
        message: `${pods.length} live pod(s) with addresses are bound to node ${node}, which has no Node object: skipped`,
      });
  const order = (c: AdoptionConflict): number => ADOPTION_CONFLICT_KINDS.indexOf(c.kind);
  conflicts.sort((a, b) => order(a) - order(b) || a.node.localeCompare(b.node));
  const count = (node: string): number => conflicts.filter((c) => c.node === node).length;
  return { nodes: plans.map((p) => ({ ...p, conflicts: count(p.node) })), conflicts, notes };
}

/** A live pod bound to a node, with its addresses (canonical text and parsed). */
interface LivePod extends Holder {
  readonly addresses: readonly { readonly text: string; readonly ip: IP }[];
}

/** Live pods with at least one address, by node, each node's sorted by namespace/name. */
function podsByNode(pods: readonly Pod[]): Map<string, LivePod[]> {
  const byNode = new Map<string, LivePod[]>();
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (!node || !isLivePod(pod)) continue;
    const addresses = podIPs(pod).flatMap((text) => {
      const ip = parseIP(text);
      return ip ? [{ text, ip }] : [];
    });
    if (addresses.length === 0) continue;
    const live = { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name, node, addresses };
    const list = byNode.get(node);
    if (list) list.push(live);
    else byNode.set(node, [live]);
  }
  const key = (p: LivePod): string => `${p.namespace}/${p.name}`;
  for (const list of byNode.values()) list.sort((a, b) => key(a).localeCompare(key(b)));
  return byNode;
}

function contextOf(
  input: AdoptionInput,
  podCIDRs: readonly { node: string; cidr: Cidr }[],
  byNode: ReadonlyMap<string, readonly LivePod[]>,
): PlanContext {
  const holders = new Map<string, Holder[]>();
  for (const pods of byNode.values())
    for (const pod of pods) {
      const holder = { namespace: pod.namespace, name: pod.name, node: pod.node };
      for (const { text } of pod.addresses) {
        const list = holders.get(text);
        if (list) list.push(holder);
        else holders.set(text, [holder]);
      }
    }
  return {
    snapshot: snapshotOf({ config: undefined, pools: input.pools, reservations: [] }, 0),
    blocks: blocksByAddress(input.blocks),
    holders,
    clusterCidr: coveringCidr(podCIDRs.map((p) => p.cidr).filter((c) => c.family === 4)),
  };
}

/** Each reserved CIDR with its IPReservation's name (host bits cleared, as core reads them). */
function reservationsOf(reservations: readonly IPReservation[]): { name: string; cidr: Cidr }[] {
  return reservations.flatMap((r) =>
    r.spec.reservedCIDRs.flatMap((text) => {
      const cidr = parseCidr(text, { strict: false });
      return cidr ? [{ name: r.metadata.name, cidr }] : [];
    }),
  );
}

/**
 * Where one pod address lands, and its conflicts: outside the node's podCIDRs, at a reserved
 * ordinal of its block, inside an IPReservation.
 */
function placeAddress(
  where: {
    own: NodePodCIDRs;
    podCIDRs: readonly { node: string; cidr: Cidr }[];
    reservations: readonly { name: string; cidr: Cidr }[];
  },
  pod: LivePod,
  { text: address, ip }: { text: string; ip: IP },
): { plan: PodAddressPlan; ip: IP; conflicts: AdoptionConflict[] } {
  const { own } = where;
  const named = { namespace: pod.namespace, name: pod.name };
  const plan = { address, namespace: named.namespace, pod: named.name };
  const index = own.cidrs.findIndex((c) => cidrContains(c, ip));
  const podCIDR = own.plans[index];
  if (!podCIDR) {
    const other = where.podCIDRs.find((p) => p.node !== own.node && cidrContains(p.cidr, ip));
    const elsewhere = other ? { elsewhere: { node: other.node, podCIDR: formatCidr(other.cidr) } } : {};
    const podCIDRs = own.plans.map((p) => p.cidr);
    return {
      plan,
      ip,
      conflicts: [outsidePodCIDR({ node: own.node, pod: named, address, podCIDRs, ...elsewhere })],
    };
  }
  const conflicts: AdoptionConflict[] = [];
  const reservation = where.reservations.find((r) => cidrContains(r.cidr, ip));
  if (reservation)
    conflicts.push(
      reservedAddress({
        node: own.node,
        pod: named,
        address,
        podCIDR: podCIDR.cidr,
        reservation: reservation.name,
      }),
    );
  const { pool, blockSize } = podCIDR;
  if (pool === undefined || blockSize === undefined)
    return { plan: { ...plan, podCIDR: podCIDR.cidr }, ip, conflicts };
  const place = tilePlace(ip, blockSize);
  if (!place.assignable)
    conflicts.push(
      reservedOrdinal({
        node: own.node,
        pod: named,
        address,
        podCIDR: podCIDR.cidr,
        pool,
        blockSize,
        block: place.block,
        ordinal: place.ordinal,
        podCIDRPrefix: own.cidrs[index]?.prefixLength ?? blockSize,
      }),
    );
  return {
    plan: { ...plan, podCIDR: podCIDR.cidr, block: place.block, ordinal: place.ordinal },
    ip,
    conflicts,
  };
}

/** Two nodes' podCIDRs that overlap: one conflict per podCIDR overlapping one listed before it. */
function podCIDROverlaps(podCIDRs: readonly { node: string; cidr: Cidr }[]): AdoptionConflict[] {
  const sorted = [...podCIDRs].sort(
    (a, b) =>
      a.cidr.family - b.cidr.family || (a.cidr.base < b.cidr.base ? -1 : a.cidr.base > b.cidr.base ? 1 : 0),
  );
  const conflicts: AdoptionConflict[] = [];
  let widest: { node: string; cidr: Cidr } | undefined;
  for (const entry of sorted) {
    if (widest && widest.cidr.family === entry.cidr.family && entry.cidr.base <= cidrLast(widest.cidr)) {
      if (widest.node !== entry.node)
        conflicts.push(
          overlappingPodCIDR({
            node: entry.node,
            podCIDR: formatCidr(entry.cidr),
            other: widest.node,
            otherPodCIDR: formatCidr(widest.cidr),
          }),
        );
      if (cidrLast(entry.cidr) <= cidrLast(widest.cidr)) continue;
    }
    widest = entry;
  }
  return conflicts;
}

/** One conflict per address held by more than one live pod, on the first holder's node. */
function duplicates(context: PlanContext): AdoptionConflict[] {
  return [...context.holders]
    .filter(([, holders]) => holders.length > 1)
    .map(([address, holders]) => duplicateAddress({ node: holders[0]?.node ?? '', address, holders }));
}

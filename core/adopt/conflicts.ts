/**
 * What stops a node's host-local addresses from becoming blockipam blocks in place, as values
 * (pure): each conflict names the objects and says what to fix, in the operator's next step.
 */

/**
 * Conflict kinds, in the order a plan lists them (what the operator fixes first):
 * - `ipv6-podcidr`: an IPv6 podCIDR (kind gives a /64; blocks are /116–/126) — not adoptable yet;
 * - `overlapping-podcidr`: two nodes' podCIDRs share addresses;
 * - `no-pool`: no eligible IPPool of the node covers the podCIDR;
 * - `block-size`: the covering pool's blocks are larger than the podCIDR;
 * - `not-podcidr-pool`: the covering pool is no podCIDR pool (`spec.podCIDRBlocks`): any node
 *   could claim a block inside this node's podCIDR while host-local still hands its addresses out;
 * - `overlapping-block`: an IPAMBlock over the podCIDR is affine to another node, holds another
 *   pod's address, or is not one of the podCIDR's blocks;
 * - `outside-podcidr`: a pod address outside its node's podCIDRs;
 * - `reserved-ordinal`: a pod address at a reserved ordinal (network, gateway, broadcast) of its block;
 * - `reserved-address`: a pod address inside an IPReservation;
 * - `duplicate-address`: one address on more than one live pod.
 */
export const ADOPTION_CONFLICT_KINDS = [
  'ipv6-podcidr',
  'overlapping-podcidr',
  'no-pool',
  'block-size',
  'not-podcidr-pool',
  'overlapping-block',
  'outside-podcidr',
  'reserved-ordinal',
  'reserved-address',
  'duplicate-address',
] as const;
export type AdoptionConflictKind = (typeof ADOPTION_CONFLICT_KINDS)[number];

/** One conflict: the node it stops, a sentence naming the objects, and what to fix. */
export interface AdoptionConflict {
  readonly kind: AdoptionConflictKind;
  readonly node: string;
  readonly message: string;
  /** What to fix, naming the object and, where there is one, the command. */
  readonly fix: string;
  readonly podCIDR?: string;
  /** `namespace/name`. */
  readonly pod?: string;
  readonly address?: string;
  /** IPAMBlock name. */
  readonly block?: string;
  readonly pool?: string;
}

/**
 * Information that stops nothing:
 * - `no-podcidr`: a node without podCIDR (and no pod address: those are `outside-podcidr`);
 * - `split-podcidr`: the pool cuts the podCIDR into several blocks — each reserves its own network,
 *   gateway and broadcast address, and new pods in a later block get that block's gateway, not `.1`;
 * - `no-node`: live pods with addresses bound to a node that has no Node object (skipped).
 */
export const ADOPTION_NOTE_KINDS = ['no-podcidr', 'split-podcidr', 'no-node'] as const;
export type AdoptionNoteKind = (typeof ADOPTION_NOTE_KINDS)[number];

export interface AdoptionNote {
  readonly kind: AdoptionNoteKind;
  readonly node: string;
  readonly message: string;
}

/** A pod named as `namespace/name`. */
export interface PodName {
  readonly namespace: string;
  readonly name: string;
}

const podText = (pod: PodName): string => `${pod.namespace}/${pod.name}`;
const restart = (pod: PodName): string => `kubectl delete pod -n ${pod.namespace} ${pod.name}`;

/** A pod address outside every podCIDR of its node (`elsewhere`: another node's podCIDR holding it). */
export function outsidePodCIDR(f: {
  node: string;
  pod: PodName;
  address: string;
  podCIDRs: readonly string[];
  elsewhere?: { node: string; podCIDR: string };
}): AdoptionConflict {
  const mine =
    f.podCIDRs.length > 0
      ? `its node's podCIDRs ${f.podCIDRs.join(', ')}`
      : 'any podCIDR (the node has none)';
  const other = f.elsewhere ? ` (it is in node ${f.elsewhere.node}'s podCIDR ${f.elsewhere.podCIDR})` : '';
  return {
    kind: 'outside-podcidr',
    node: f.node,
    pod: podText(f.pod),
    address: f.address,
    ...(f.podCIDRs[0] !== undefined ? { podCIDR: f.podCIDRs.join(',') } : {}),
    message: `pod ${podText(f.pod)} on node ${f.node} has ${f.address}, outside ${mine}${other}`,
    fix: `host-local on ${f.node} did not hand out ${f.address}: find what did (another IPAM, a static address) and restart the pod so it gets an address from its node's podCIDR (${restart(f.pod)})`,
  };
}

/** A pod address at a reserved ordinal of the block the pool's tiling puts it in. */
export function reservedOrdinal(f: {
  node: string;
  pod: PodName;
  address: string;
  podCIDR: string;
  pool: string;
  blockSize: number;
  block: string;
  ordinal: number;
  podCIDRPrefix: number;
}): AdoptionConflict {
  return {
    kind: 'reserved-ordinal',
    node: f.node,
    pod: podText(f.pod),
    address: f.address,
    podCIDR: f.podCIDR,
    block: f.block,
    pool: f.pool,
    message: `pod ${podText(f.pod)} on node ${f.node} has ${f.address}, ordinal ${f.ordinal} of block ${f.block}: a reserved ordinal (network, gateway or broadcast) of IPPool ${f.pool}'s /${f.blockSize} blocks, which core never assigns`,
    fix: `hold podCIDR ${f.podCIDR} in a pool with blockSize ${f.podCIDRPrefix} (one block per podCIDR keeps host-local's reserved addresses), or restart the pod so it gets another address (${restart(f.pod)})`,
  };
}

/** A pod address inside an IPReservation (core's static assignment refuses it). */
export function reservedAddress(f: {
  node: string;
  pod: PodName;
  address: string;
  podCIDR: string;
  reservation: string;
}): AdoptionConflict {
  return {
    kind: 'reserved-address',
    node: f.node,
    pod: podText(f.pod),
    address: f.address,
    podCIDR: f.podCIDR,
    message: `pod ${podText(f.pod)} on node ${f.node} has ${f.address}, inside IPReservation ${f.reservation}: core never records a reserved address`,
    fix: `take ${f.address} out of IPReservation ${f.reservation} (kubectl edit ipreservation ${f.reservation}), or restart the pod so it gets another address (${restart(f.pod)})`,
  };
}

/** One address on several live pods. */
export function duplicateAddress(f: {
  node: string;
  address: string;
  holders: readonly (PodName & { node: string })[];
}): AdoptionConflict {
  const names = f.holders.map((h) => `${podText(h)} on node ${h.node}`).join(', ');
  return {
    kind: 'duplicate-address',
    node: f.node,
    address: f.address,
    message: `${f.address} is the address of ${f.holders.length} live pods: ${names}`,
    fix: `only one pod may keep ${f.address}: restart the others (kubectl delete pod) before adopting`,
  };
}

/** An IPv6 podCIDR: blocks are /116–/126, a node's IPv6 podCIDR (kind's /64) is not one. */
export function ipv6PodCIDR(f: { node: string; podCIDR: string }): AdoptionConflict {
  return {
    kind: 'ipv6-podcidr',
    node: f.node,
    podCIDR: f.podCIDR,
    message: `podCIDR ${f.podCIDR} of node ${f.node}: not adoptable yet (IPv6 podCIDRs cannot be blocks)`,
    fix: `keep ${f.node} on host-local: adoption covers IPv4 podCIDRs only for now`,
  };
}

/** Two nodes' podCIDRs share addresses: each would be one node's blocks. */
export function overlappingPodCIDR(f: {
  node: string;
  podCIDR: string;
  other: string;
  otherPodCIDR: string;
}): AdoptionConflict {
  return {
    kind: 'overlapping-podcidr',
    node: f.node,
    podCIDR: f.podCIDR,
    message: `podCIDR ${f.podCIDR} of node ${f.node} overlaps podCIDR ${f.otherPodCIDR} of node ${f.other}`,
    fix: `a block is affine to one node: give one of them another podCIDR (kube-controller-manager allocates disjoint ones; find who set spec.podCIDR by hand)`,
  };
}

/** No eligible pool of the node covers the podCIDR. */
export function noPool(f: {
  node: string;
  podCIDR: string;
  why: string;
  suggestion: { cidr: string; blockSize: number } | undefined;
}): AdoptionConflict {
  const create = f.suggestion
    ? `create one covering the cluster CIDR (kube-controller-manager's --cluster-cidr; ${f.suggestion.cidr} holds every node's podCIDR), holding each node's podCIDR as its block and disabled while host-local still hands out its addresses: ipamctl pool create NAME --cidr ${f.suggestion.cidr} --block-size ${f.suggestion.blockSize} --podcidr-blocks --disabled, then enable it once the agents run in adoption mode (chart adopt.hostLocalStore: only opted-in nodes are served)`
    : 'no block size holds it: podCIDRs smaller than the smallest block (/30) cannot be adopted';
  return {
    kind: 'no-pool',
    node: f.node,
    podCIDR: f.podCIDR,
    message: `no IPPool node ${f.node} may use covers its podCIDR ${f.podCIDR}: ${f.why}`,
    fix: `${create}; or change a pool named above so the node may use it (Automatic, nodeSelector matching the node)`,
  };
}

/** The covering pool's blocks are larger than the podCIDR. */
export function blockTooLarge(f: {
  node: string;
  podCIDR: string;
  pool: string;
  blockSize: number;
  want: number | undefined;
}): AdoptionConflict {
  return {
    kind: 'block-size',
    node: f.node,
    podCIDR: f.podCIDR,
    pool: f.pool,
    message: `IPPool ${f.pool}'s blocks (/${f.blockSize}) are larger than podCIDR ${f.podCIDR} of node ${f.node}: a block would span other nodes' podCIDRs`,
    fix:
      f.want === undefined
        ? 'podCIDRs smaller than the smallest block (/30) cannot be adopted'
        : `hold the podCIDRs in a pool with blockSize ${f.want} (blockSize is immutable: delete IPPool ${f.pool} while it holds no allocation — ipamctl pool delete ${f.pool} — and create it again with --block-size ${f.want})`,
  };
}

/** The covering pool is no podCIDR pool: other nodes could claim blocks inside this podCIDR. */
export function notPodCIDRPool(f: { node: string; podCIDR: string; pool: string }): AdoptionConflict {
  return {
    kind: 'not-podcidr-pool',
    node: f.node,
    podCIDR: f.podCIDR,
    pool: f.pool,
    message: `IPPool ${f.pool} covers podCIDR ${f.podCIDR} of node ${f.node} but is no podCIDR pool: once it is enabled, any node may claim a block inside this podCIDR while host-local may still hand its addresses out`,
    fix: `make it one, so that each node's podCIDR is its own block, created by the controller: kubectl patch ippool ${f.pool} --type=merge -p '{"spec":{"podCIDRBlocks":true}}'`,
  };
}

/** An IPAMBlock over the podCIDR that adoption could not make the node's own. */
export function overlappingBlock(f: {
  node: string;
  podCIDR: string;
  block: string;
  problems: readonly string[];
}): AdoptionConflict {
  return {
    kind: 'overlapping-block',
    node: f.node,
    podCIDR: f.podCIDR,
    block: f.block,
    message: `IPAMBlock ${f.block} overlaps podCIDR ${f.podCIDR} of node ${f.node}: it ${f.problems.join('; it ')}`,
    fix: `a block over ${f.node}'s podCIDR must be one of its blocks, affine to ${f.node} or to no node, holding only ${f.node}'s pods' own addresses: once the pods it holds other addresses for are gone (ipamctl show --blocks shows its use), delete it (kubectl delete ipamblock ${f.block})`,
  };
}

// Seeds for the route tests: blocks as the allocator writes them, Nodes as the API server holds
// them, and the view an agent gets once the controller has written every IPAMNode.
import { blockLabels, mustParseCidr, newBlock, nodeLabel, planIPAMNodes } from 'blockipam/core';
import type { IPAMBlock, IPAMNode, IPPool } from 'blockipam/core';
import type { RouteNode, RouteView } from '../../../block-controller/agent/routes/index.ts';

const T0 = Date.parse('2026-12-01T08:00:00Z');

/**
 * A block affine to `affinity`, with `allocations` ordinal → node, labelled as core labels it,
 * in pool `pool` (default: {@link pools}' name for the family, "p" or "p6").
 */
export function block(
  cidr: string,
  affinity: string | null,
  allocations: Record<number, string> = {},
  pool?: string,
): IPAMBlock {
  const range = mustParseCidr(cidr);
  const name = pool ?? (range.family === 4 ? 'p' : 'p6');
  const b = newBlock({ cidr: range, pool: name, node: affinity, nowMs: T0 });
  for (const [ordinal, node] of Object.entries(allocations))
    b.spec.allocations[ordinal] = {
      handle: `net.c${ordinal}.eth0`,
      node,
      allocatedAt: '2026-12-01T08:00:00Z',
      sequence: Number(ordinal),
    };
  b.metadata.labels = blockLabels(b.spec, name, range.family);
  return b;
}

/**
 * IPPools over `cidrs` (default block sizes, /26 and /122): the first of each family is named as
 * {@link block}'s default ("p", "p6"), the others `p-<index>`.
 */
export function pools(...cidrs: string[]): IPPool[] {
  const first = new Set<number>();
  return cidrs.map((cidr, index) => {
    const family = mustParseCidr(cidr).family;
    const name = first.has(family) ? `p-${index}` : family === 4 ? 'p' : 'p6';
    first.add(family);
    return { metadata: { name, creationTimestamp: '2026-11-01T00:00:00Z' }, spec: { cidr } };
  });
}

/** A Node with InternalIPs (and an ExternalIP that must never be used). */
export function node(name: string, ...internal: string[]): RouteNode {
  return {
    metadata: { name },
    status: {
      addresses: [
        { type: 'Hostname', address: name },
        { type: 'ExternalIP', address: '203.0.113.9' },
        ...internal.map((address) => ({ type: 'InternalIP', address })),
      ],
    },
  };
}

/** The cluster as the controller sees it (every block, Node and pool). */
export interface ClusterSeed {
  readonly synced?: boolean;
  readonly blocks: readonly IPAMBlock[];
  readonly nodes: readonly RouteNode[];
  readonly pools: readonly IPPool[];
}

/** Every Node's IPAMNode as the controller writes it (core's planIPAMNodes). */
export function ipamNodesOf(seed: ClusterSeed): IPAMNode[] {
  const plan = planIPAMNodes(seed.blocks, seed.pools, seed.nodes);
  return [...plan.specs].map(([name, spec]) => ({ metadata: { name }, spec }));
}

/**
 * What node `me`'s agent sees of `seed`: every IPAMNode, its own Node, its own blocks (those
 * carrying its node label, as its label-selected watch holds them) and the pools.
 */
export function routeView(seed: ClusterSeed, me: string): RouteView {
  const label = nodeLabel(me);
  return {
    synced: seed.synced ?? true,
    ipamNodes: ipamNodesOf(seed),
    node: seed.nodes.find((n) => n.metadata.name === me),
    blocks: seed.blocks.filter((b) => b.metadata.labels?.[label] !== undefined),
    pools: seed.pools,
  };
}

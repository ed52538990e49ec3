/**
 * `ipamctl show --node N` (pure part): the node's affine blocks with their free counts and the
 * node agent's view of its headroom — IPAMConfig `minFreeAddressesPerNode` (the watermark),
 * and per eligible pool the free addresses in the node's affine blocks, whether that is below
 * the watermark (the agent claims a block on its next pass) and whether the node is at
 * `maxBlocksPerNode` (the agent cannot, pods borrow). The numbers are the agent's own: this
 * calls its planner (`block-controller/agent/upkeep/plan.ts`, pure), so ipamctl and the agent
 * never disagree on what "below the watermark" means (docs/design-agent.md §Pre-claim).
 */
import { capacityOf, POOL_LABEL, snapshotOf } from 'blockipam/core';
import type { IPAMBlock, IPAMConfigObject, IPPool, IPReservation, IPFamily } from 'blockipam/core';
import { freeOf, planUpkeep } from '../../block-controller/agent/upkeep/plan.ts';

/** One affine block of the node. */
export interface NodeBlock {
  name: string;
  cidr: string;
  pool: string;
  capacity: number;
  used: number;
  free: number;
}

/** The agent's headroom of one pool the node may pre-claim in. */
export interface NodePoolHeadroom {
  pool: string;
  family: IPFamily;
  /** The node's affine blocks of the pool. */
  blocks: number;
  /** Free addresses in them (borrowed addresses elsewhere do not count). */
  free: number;
  /** free < minFreeAddressesPerNode (and the watermark is not 0). */
  belowWatermark: boolean;
  /** Below the watermark, but the node holds maxBlocksPerNode blocks of the family. */
  atBlockLimit: boolean;
}

export interface NodeHeadroom {
  /** IPAMConfig minFreeAddressesPerNode (0: the agent does not pre-claim). */
  watermark: number;
  maxBlocksPerNode: number;
  autoAllocateBlocks: boolean;
  /** Usable Automatic pools whose nodeSelector matches the node's labels, oldest first. */
  pools: NodePoolHeadroom[];
  blocks: NodeBlock[];
}

export interface NodeHeadroomInput {
  node: string;
  /** The Node's labels; undefined when the Node object does not exist. */
  nodeLabels: Readonly<Record<string, string>> | undefined;
  config: IPAMConfigObject | undefined;
  pools: readonly IPPool[];
  reservations: readonly IPReservation[];
  /** The node's affine blocks. */
  affine: readonly IPAMBlock[];
  nowMs: number;
}

/** The node's blocks and headroom as the agent computes them. */
export function nodeHeadroom(input: NodeHeadroomInput): NodeHeadroom {
  const snapshot = snapshotOf(
    { config: input.config, pools: input.pools, reservations: input.reservations },
    input.nowMs,
  );
  const plan = planUpkeep({
    node: input.node,
    nodeLabels: input.nodeLabels ?? {},
    snapshot,
    affine: input.affine,
    nowMs: input.nowMs,
  });
  const { settings } = snapshot;
  const atLimit = new Set(plan.atLimit);
  return {
    watermark: plan.watermark,
    maxBlocksPerNode: settings.maxBlocksPerNode,
    autoAllocateBlocks: settings.autoAllocateBlocks,
    pools: plan.headroom.map((h) => ({
      pool: h.pool,
      family: h.family,
      blocks: h.blocks,
      free: h.free,
      belowWatermark: plan.watermark > 0 && h.free < plan.watermark,
      atBlockLimit: atLimit.has(h.pool),
    })),
    blocks: [...input.affine]
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map((b) => ({
        name: b.metadata.name,
        cidr: b.spec.cidr,
        pool: b.metadata.labels?.[POOL_LABEL] ?? '',
        capacity: capacityOf(b),
        used: Object.keys(b.spec.allocations).length,
        free: freeOf(b),
      })),
  };
}

/**
 * `ipamctl show --node N` (pure part): the node's affine blocks with their free counts and the
 * node agent's view of its headroom — IPAMConfig `minFreeAddressesPerNode` (the watermark),
 * and per eligible pool the free addresses in the node's affine blocks, whether that is below
 * the watermark (the agent claims a block on its next pass) and whether the node is at
 * `maxBlocksPerNode` (the agent cannot, pods borrow). The numbers are the agent's own: this
 * calls core's planner (`planUpkeep`, pure), so ipamctl and the agent
 * never disagree on what "below the watermark" means (docs/design-agent.md §Pre-claim).
 */
import {
  cannotClaimText,
  capacityOf,
  cidrOf,
  matchesSelector,
  nodeHeadroom as poolHeadroom,
  POOL_LABEL,
  poolCidr,
  poolUtilization,
  snapshotOf,
} from 'blockipam/core';
import type {
  IPAMBlock,
  IPAMConfigObject,
  IPPool,
  IPReservation,
  IPFamily,
  NodeHeadroom as PoolHeadroomEntry,
  PoolSnapshot,
  ShortReason,
} from 'blockipam/core';
import { blockFree, planUpkeep } from 'blockipam/core';

/** One affine block of the node. */
interface NodeBlock {
  name: string;
  cidr: string;
  pool: string;
  capacity: number;
  used: number;
  free: number;
}

/** The agent's headroom of one pool the node may pre-claim in. */
interface NodePoolHeadroom {
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
  /** Whether the node could claim a block of the pool now, else why (core's claimBlockedBy). */
  claim: 'ok' | ShortReason;
  /** Why a claim would fail and what follows for the node's pods (core's cannotClaimText). */
  why?: string;
  /** A Manual pool, listed because pending pods on the node request it (their annotation). */
  requested?: true;
}

/** A pool whose nodeSelector matches the node but that no claim may use. */
interface UnusablePool {
  pool: string;
  /** "disabled (spec.disabled)", "being deleted" or "overlaps older IP pool "x"". */
  why: string;
}

export interface NodeHeadroom {
  /** IPAMConfig minFreeAddressesPerNode (0: the agent does not pre-claim). */
  watermark: number;
  maxBlocksPerNode: number;
  autoAllocateBlocks: boolean;
  /**
   * Usable Automatic pools whose nodeSelector matches the node's labels, oldest first; then the
   * usable Manual pools pending pods on the node request.
   */
  pools: NodePoolHeadroom[];
  /** Pools matching the node that are disabled, being deleted or shadowed: no claim uses them. */
  unusable: UnusablePool[];
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
  /** Every block (what is unclaimed in each pool; the node's blocks of each family). */
  blocks: readonly IPAMBlock[];
  /** The Manual pools pending pods on the node request (core's requestedManualPools); default none. */
  requested?: ReadonlySet<string>;
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
  const { verdicts: claims, entries } = claimVerdicts(input, snapshot);
  const automatic = new Set(plan.headroom.map((h) => h.pool));
  const row = (h: Pick<NodePoolHeadroom, 'pool' | 'family' | 'blocks' | 'free'>, atBlockLimit: boolean) => ({
    ...{ pool: h.pool, family: h.family, blocks: h.blocks, free: h.free },
    belowWatermark: plan.watermark > 0 && h.free < plan.watermark,
    atBlockLimit,
    ...(claims.get(h.pool) ?? { claim: 'ok' as const }),
  });
  const manual = entries
    .filter((e) => !automatic.has(e.pool) && input.requested?.has(e.pool) === true)
    .map((e) => {
      const family = poolCidr(snapshot.usable.find((p) => p.metadata.name === e.pool)!).family;
      return { ...row({ ...e, family }, e.cannotClaim === 'MaxBlocksPerNode'), requested: true as const };
    });
  return {
    watermark: plan.watermark,
    maxBlocksPerNode: settings.maxBlocksPerNode,
    autoAllocateBlocks: settings.autoAllocateBlocks,
    pools: [...plan.headroom.map((h) => row(h, atLimit.has(h.pool))), ...manual],
    unusable: unusablePools(snapshot, input.nodeLabels ?? {}),
    blocks: [...input.affine]
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map((b) => ({
        name: b.metadata.name,
        cidr: b.spec.cidr,
        pool: b.metadata.labels?.[POOL_LABEL] ?? '',
        capacity: capacityOf(b),
        used: Object.keys(b.spec.allocations).length,
        free: blockFree(b),
      })),
  };
}

/**
 * Per pool, whether the node could claim a block now and why not: core's nodeHeadroom (the
 * controller's rule for short nodes, Manual pools where `input.requested`) over every block,
 * with core's texts; and core's entries.
 */
function claimVerdicts(
  input: NodeHeadroomInput,
  snapshot: PoolSnapshot,
): { verdicts: Map<string, { claim: ShortReason; why: string }>; entries: PoolHeadroomEntry[] } {
  const { settings, usable } = snapshot;
  const entries = poolHeadroom({
    pools: usable,
    ...(input.requested ? { requested: new Map([[input.node, input.requested]]) } : {}),
    nodes: [{ metadata: { name: input.node, labels: input.nodeLabels ?? {} } }],
    blocks: input.blocks,
    settings,
    unclaimedBlocks: new Map(
      usable.map((p) => [
        p.metadata.name,
        poolUtilization(p, input.blocks, snapshot.reservations).unclaimedBlocks,
      ]),
    ),
  });
  const verdicts = new Map<string, { claim: ShortReason; why: string }>();
  for (const e of entries) {
    const pool = usable.find((p) => p.metadata.name === e.pool);
    if (!e.cannotClaim || !pool) continue;
    const family = poolCidr(pool).family;
    const held = input.blocks.filter(
      (b) => b.spec.affinity === input.node && cidrOf(b).family === family,
    ).length;
    verdicts.set(e.pool, {
      claim: e.cannotClaim,
      why: cannotClaimText(e.cannotClaim, {
        pool: e.pool,
        family,
        held,
        maxBlocksPerNode: settings.maxBlocksPerNode,
        strictAffinity: settings.strictAffinity,
      }),
    });
  }
  return { verdicts, entries };
}

/** Pools whose nodeSelector matches the node but that are disabled, being deleted or shadowed. */
function unusablePools(snapshot: PoolSnapshot, nodeLabels: Readonly<Record<string, string>>): UnusablePool[] {
  return snapshot.pools
    .filter((p) => !snapshot.usable.includes(p) && matchesSelector(p.spec.nodeSelector, nodeLabels))
    .map((p) => {
      const shadow = snapshot.shadowed.find((s) => s.pool === p.metadata.name);
      const why = shadow
        ? `overlaps older IP pool "${shadow.by}"`
        : p.metadata.deletionTimestamp
          ? 'being deleted'
          : 'disabled (spec.disabled)';
      return { pool: p.metadata.name, why };
    });
}

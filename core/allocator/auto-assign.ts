/**
 * Automatic assignment (docs/design-core.md §2): per family, this node's affine blocks → claim a new block
 * (unless maxBlocksPerNode) → still-cooling addresses of its own blocks → borrow from another
 * node's block (unless strictAffinity) → a failure naming the cause. Dual-stack is all-or-nothing:
 * when the second family fails, the first is released again (by handle + sequence).
 *
 * Warm cost (an affine block has room, snapshot and labels given): 1 LIST + 1 UPDATE. The LIST
 * selects every block carrying the node's label — its affine blocks and the blocks it borrowed
 * from — so a handle that already holds an address anywhere for this node is refused (HandleInUse)
 * before anything is written.
 */
import type { IPFamily } from '../address/ip.ts';
import { cidrOf } from '../block/block.ts';
import { isAllocatable } from '../block/frozen.ts';
import { affineSelector, familySelector, nodeBlocksSelector, POOL_LABEL } from '../block/labels.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPAMBlock, IPPool } from '../resources.ts';
import { allocateFromBlocks, holdsHandle, inPools } from './block-choice.ts';
import { classifyBlocks, trustedAffine } from './block-trust.ts';
import type { TryOptions } from './block-choice.ts';
import { claimBlock } from './claim.ts';
import type { BlockLimit } from './claim.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions, Context } from './context.ts';
import { blockLimitText, exhaustedText, noPoolText, requestRefusedText } from './failure-text.ts';
import { isPodCIDRPool, passedOver, selectPools } from './pools.ts';
import type { PoolSnapshot } from './pools.ts';
import { assignAllOrNothing, gatherInputs, nodeNameProblem, ownerOf } from './request.ts';
import type { AllocatedAddress, AssignFailure, AssignOutcome, AutoAssignRequest } from './types.ts';

// 8 rounds of (list, try, claim): enough for a node whose fresh blocks keep being filled by its
// own concurrent ADDs; past that, the borrow / failure path decides.
const MAX_CLAIM_ROUNDS = 8;

type FamilyOutcome = AllocatedAddress | { reason: AssignFailure; message: string };

/**
 * Assigns one address per wanted family to `request.handle`.
 * @returns the addresses, or a failure (NoPool, PoolRefused, Exhausted, BlockLimit, HandleInUse)
 * @throws UnavailableError / ApiError from the datastore; RetriesExhaustedError when
 *   compare-and-swap keeps losing. Anything assigned before a throw is rolled back (best effort).
 */
export async function autoAssign(
  ds: Datastore,
  request: AutoAssignRequest,
  options: AllocatorOptions = {},
): Promise<AssignOutcome> {
  const ctx = contextOf(ds, options);
  const families: IPFamily[] = [
    ...((request.ipv4 ?? true) ? [4 as const] : []),
    ...(request.ipv6 ? [6 as const] : []),
  ];
  if (families.length === 0) return { ok: false, reason: 'NoPool', message: 'no IP family requested' };
  const badNode = nodeNameProblem(request.node);
  if (badNode) return { ok: false, reason: 'NotAllowed', message: badNode };
  const [inputs, mine] = await Promise.all([
    gatherInputs(ctx, request),
    ctx.ds.blocks.list({ labelSelector: nodeBlocksSelector(request.node) }),
  ]);
  return assignAllOrNothing(ctx, request.node, families, (family) =>
    assignFamily(ctx, { request, family, mine, ...inputs }),
  );
}

interface FamilyJob {
  request: AutoAssignRequest;
  family: IPFamily;
  /** Every block holding anything of the node: affine, or with addresses it borrowed. */
  mine: readonly IPAMBlock[];
  snapshot: PoolSnapshot;
  nodeLabels: Readonly<Record<string, string>>;
  namespaceLabels: Readonly<Record<string, string>>;
}

async function assignFamily(ctx: Context, job: FamilyJob): Promise<FamilyOutcome> {
  const { request, family, snapshot } = job;
  const poolRequest = {
    family,
    nodeLabels: job.nodeLabels,
    namespaceLabels: job.namespaceLabels,
    ...(request.pools ? { requested: request.pools } : {}),
  };
  const asker = { family, node: request.node, ...(request.pod ? { namespace: request.pod.namespace } : {}) };
  const choice = selectPools(snapshot, poolRequest);
  if ('refused' in choice)
    return {
      reason: choice.disabled ? 'PoolDisabled' : 'PoolRefused',
      message: requestRefusedText(choice.refused, asker),
    };
  if (choice.pools.length === 0) {
    const text = noPoolText(asker, passedOver(snapshot, poolRequest));
    return { reason: text.disabled ? 'PoolDisabled' : 'NoPool', message: text.message };
  }
  const owner = ownerOf(request);
  const base = {
    owner,
    cooldownSeconds: snapshot.settings.ipCooldownSeconds,
    reservations: snapshot.reservations,
  };
  const own = { ...base, affinity: request.node };
  const eligible = inPools(choice.pools);
  const ofFamily = job.mine.filter((b) => cidrOf(b).family === family);
  if (ofFamily.some((b) => holdsHandle(b, request.handle))) return found('handle', request.handle, family);
  // Only trusted blocks affine by their spec are the node's (block-trust.ts): a block labelled
  // affine to this node by someone else neither serves it nor counts against maxBlocksPerNode.
  // A frozen one (frozen.ts) is still the node's for routes and releases, but neither serves nor
  // counts: the node claims another instead of being locked out by it.
  let held = allocatableAffine(ofFamily, snapshot.pools, request.node);
  let affine = held.filter(eligible);
  let limitHit = false;
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    const got = await allocateFromBlocks(ctx, affine, { ...own, mode: 'fresh' });
    if (got !== undefined) return found(got, request.handle, family);
    limitHit ||= held.length >= snapshot.settings.maxBlocksPerNode;
    if (!snapshot.settings.autoAllocateBlocks || held.length >= snapshot.settings.maxBlocksPerNode) break;
    const limit = { held: held.length, max: snapshot.settings.maxBlocksPerNode, pools: snapshot.pools };
    const claimed = await claimFirst(ctx, choice.pools, request.node, snapshot, limit);
    if (!claimed) break;
    // 'limit': a concurrent ADD of this node claimed meanwhile — use its block (next round).
    limitHit = claimed === 'limit';
    const fresh =
      claimed === 'limit' ? undefined : await allocateFromBlocks(ctx, [claimed], { ...own, mode: 'fresh' });
    if (fresh !== undefined) return found(fresh, request.handle, family);
    const listed = await ctx.ds.blocks.list({ labelSelector: affineSelector(request.node, family) });
    held = allocatableAffine(listed, snapshot.pools, request.node);
    affine = held.filter(eligible);
  }
  const cooling = await allocateFromBlocks(ctx, affine, { ...own, mode: 'any' });
  if (cooling !== undefined) return found(cooling, request.handle, family);
  const borrowed = snapshot.settings.strictAffinity
    ? undefined
    : await borrow(ctx, { ...base, mode: 'fresh' }, { node: request.node, family, eligible, snapshot });
  if (borrowed !== undefined) return found(borrowed, request.handle, family);
  return failure(job, choice.pools, limitHit, held.length);
}

/** The node's trusted affine blocks (trustedAffine) it may allocate from: what maxBlocksPerNode counts. */
function allocatableAffine(
  blocks: readonly IPAMBlock[],
  pools: readonly IPPool[],
  node: string,
): IPAMBlock[] {
  return trustedAffine(blocks, pools, node).filter(isAllocatable);
}

function found(got: AllocatedAddress | 'handle', handle: string, family: IPFamily): FamilyOutcome {
  return got === 'handle'
    ? { reason: 'HandleInUse', message: `handle ${handle} already holds an IPv${family} address` }
    : got;
}

/** Claims a block in the first pool (in preference order) that has one free. */
async function claimFirst(
  ctx: Context,
  pools: readonly IPPool[],
  node: string,
  snapshot: PoolSnapshot,
  limit: BlockLimit,
): Promise<IPAMBlock | 'limit' | undefined> {
  for (const pool of pools) {
    if (isPodCIDRPool(pool)) continue; // its blocks are the nodes' podCIDRs: the controller's
    const block = await claimBlock(ctx, pool, node, snapshot.reservations, limit);
    if (block) return block;
  }
  return undefined;
}

/**
 * Borrows from another node's (or an unowned) trusted block of the allowed pools but podCIDR pools
 * (a podCIDR is its node's alone: pools.ts isPodCIDRPool): one LIST of
 * the family's blocks, classified (block-trust.ts: a block overlapping an older one, or of the
 * wrong size, is never borrowed from; nor a frozen one: allocateFromBlocks passes it over), tried
 * from a random start so borrowers spread out.
 */
async function borrow(
  ctx: Context,
  options: TryOptions,
  where: {
    node: string;
    family: IPFamily;
    eligible: (b: IPAMBlock) => boolean;
    snapshot: PoolSnapshot;
  },
): Promise<AllocatedAddress | 'handle' | undefined> {
  const listed = await ctx.ds.blocks.list({ labelSelector: familySelector(where.family) });
  const podCIDRPools = new Set(where.snapshot.pools.filter(isPodCIDRPool).map((p) => p.metadata.name));
  const blocks = classifyBlocks(listed, where.snapshot.pools).trusted.filter(
    (b) =>
      where.eligible(b) &&
      b.spec.affinity !== where.node &&
      !podCIDRPools.has(b.metadata.labels?.[POOL_LABEL] ?? ''),
  );
  const start = Math.floor(ctx.random() * blocks.length);
  const order = [...blocks.slice(start), ...blocks.slice(0, start)];
  for (const mode of ['fresh', 'any'] as const) {
    const got = await allocateFromBlocks(ctx, order, { ...options, mode });
    if (got !== undefined) {
      if (got !== 'handle') ctx.stats.borrows += 1;
      return got;
    }
  }
  return undefined;
}

/** Exhausted or BlockLimit, with the text naming the pools tried, why, and the next step. */
function failure(job: FamilyJob, pools: readonly IPPool[], limitHit: boolean, held: number): FamilyOutcome {
  const { request, family, snapshot } = job;
  const facts = {
    family,
    node: request.node,
    pools: pools.map((p) => p.metadata.name),
    autoAllocateBlocks: snapshot.settings.autoAllocateBlocks,
    strictAffinity: snapshot.settings.strictAffinity,
  };
  if (limitHit)
    return {
      reason: 'BlockLimit',
      message: blockLimitText({ ...facts, held, max: snapshot.settings.maxBlocksPerNode }),
    };
  return { reason: 'Exhausted', message: exhaustedText(facts) };
}

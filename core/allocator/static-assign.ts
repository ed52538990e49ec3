/**
 * Static assignment (pod annotation, `IP=` in CNI_ARGS, `runtimeConfig.ips`): each
 * address must lie in a usable pool allowed for this node and namespace (Manual pools included:
 * naming the address is the request), must not be reserved (block reserved ordinals,
 * IPReservations), and must not be taken. A missing block is claimed for this node (a static
 * address claims a whole block, as in Calico); an existing frozen block (core/block/frozen.ts) is
 * never allocated from: `NotAllowed` naming the block and why. All-or-nothing across the addresses.
 */
import { blockCidrFor, blockNameOf, ordinalOf, reservedOrdinals } from '../address/block-cidr.ts';
import { cidrContains, parseIP } from '../address/ip.ts';
import type { IP } from '../address/ip.ts';
import { allocateOrdinal } from '../block/block.ts';
import { freezesOf } from '../block/frozen.ts';
import type { Freeze } from '../block/frozen.ts';
import type { Datastore } from '../datastore/datastore.ts';
import type { IPPool } from '../resources.ts';
import { holdsHandle } from './block-choice.ts';
import { updateBlock } from './cas.ts';
import { getOrClaimBlock } from './claim.ts';
import { findByHandle } from './release.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions, Context } from './context.ts';
import { describe } from './describe.ts';
import { requestRefusedText, takenText } from './failure-text.ts';
import { isPodCIDRPool, poolBlockSize, poolCidr, selectPools } from './pools.ts';
import type { PoolSnapshot } from './pools.ts';
import { assignAllOrNothing, gatherInputs, nodeNameProblem, ownerOf } from './request.ts';
import type { AllocatedAddress, AssignFailure, AssignOutcome, StaticAssignRequest } from './types.ts';

type One = AllocatedAddress | { reason: AssignFailure; message: string };

/**
 * Assigns exactly `request.addresses` (at most one per family) to `request.handle`.
 * @returns the addresses, or a failure (NotInPool, Reserved, Taken, NotAllowed — also the
 *   address's block is frozen —, HandleInUse, PoolDisabled: the address's pool is disabled or
 *   being deleted)
 * @throws datastore errors; RetriesExhaustedError. Earlier addresses are rolled back first.
 */
export async function assignIP(
  ds: Datastore,
  request: StaticAssignRequest,
  options: AllocatorOptions = {},
): Promise<AssignOutcome> {
  const ctx = contextOf(ds, options);
  const badNode = nodeNameProblem(request.node);
  if (badNode) return { ok: false, reason: 'NotAllowed', message: badNode };
  const ips = request.addresses.map((text) => ({ text, ip: parseIP(text) }));
  const bad = ips.find(({ ip }) => ip === undefined);
  if (bad)
    return { ok: false, reason: 'NotInPool', message: `${JSON.stringify(bad.text)} is not an IP address` };
  if (new Set(ips.map(({ ip }) => ip?.family)).size !== ips.length)
    return { ok: false, reason: 'NotInPool', message: 'at most one address per IP family' };
  // A live attachment never gets a second address (ptp's cleanup DEL would free it): one LIST of the blocks this
  // node owns or has borrowed into finds the handle wherever its address came from.
  const held = await findByHandle(ctx.ds, request.handle, { node: request.node });
  if (held.length > 0)
    return {
      ok: false,
      reason: 'HandleInUse',
      message: `handle ${request.handle} already holds ${held.map((a) => a.address).join(', ')}`,
    };
  const inputs: Inputs = {
    ...(await gatherInputs(ctx, request)),
    node: request.node,
    ...(request.pod ? { namespace: request.pod.namespace } : {}),
  };
  return assignAllOrNothing(ctx, request.node, ips, ({ text, ip }) =>
    assignOne(ctx, request, { text, ip: ip as IP }, inputs),
  );
}

interface Inputs {
  /** The node and the pod's namespace, as texts name them. */
  node: string;
  namespace?: string;
  snapshot: PoolSnapshot;
  nodeLabels: Readonly<Record<string, string>>;
  namespaceLabels: Readonly<Record<string, string>>;
}

async function assignOne(
  ctx: Context,
  request: StaticAssignRequest,
  { text, ip }: { text: string; ip: IP },
  inputs: Inputs,
): Promise<One> {
  const pool = findAllowedPool(inputs, text, ip);
  if ('reason' in pool) return pool;
  if (inputs.snapshot.reservations.some((r) => cidrContains(r, ip)))
    return { reason: 'Reserved', message: `${text} is inside an IPReservation` };
  const blockCidr = blockCidrFor(ip, poolBlockSize(pool));
  const ordinal = ordinalOf(blockCidr, ip) ?? -1;
  if (reservedOrdinals(blockCidr).includes(ordinal))
    return {
      reason: 'Reserved',
      message: `${text} is reserved in block ${blockNameOf(blockCidr)} (network, gateway or broadcast address)`,
    };
  if (isPodCIDRPool(pool)) {
    // a podCIDR is its node's alone: no claim, no borrowing (pools.ts isPodCIDRPool)
    const own = await ctx.ds.blocks.get(blockNameOf(blockCidr));
    if (own?.spec.affinity !== request.node)
      return {
        reason: 'NotAllowed',
        message: `${text}: IPPool ${pool.metadata.name} holds nodes' podCIDRs, and ${own ? `block ${own.metadata.name} is node "${own.spec.affinity ?? '(none)'}"'s` : `no block ${blockNameOf(blockCidr)} of node "${request.node}" holds it`}: a node takes only addresses of its own podCIDR there`,
      };
  }
  const got = await getOrClaimBlock(ctx, pool, request.node, blockCidr);
  if ('overlaps' in got)
    return {
      reason: 'NotAllowed',
      message: `${text}: block ${blockNameOf(blockCidr)} would overlap existing IPAMBlock "${got.overlaps}"`,
    };
  if (inputs.snapshot.settings.strictAffinity && got.block.spec.affinity !== request.node) {
    return {
      reason: 'NotAllowed',
      message: `${text}: block ${got.block.metadata.name} belongs to node "${got.block.spec.affinity ?? '(none)'}" and strictAffinity forbids borrowing`,
    };
  }
  const outcome = await updateBlock<One>(ctx, got.block, (current) => {
    const freezes = freezesOf(current);
    if (freezes.length > 0) return { skip: frozenRefusal(text, current.metadata.name, freezes) };
    const holder = current.spec.allocations[ordinal];
    if (holder)
      return {
        skip: {
          reason: 'Taken',
          message: takenText({
            address: text,
            pool: pool.metadata.name,
            block: current.metadata.name,
            holder,
            requester: request.pod?.namespace,
          }),
        },
      };
    if (holdsHandle(current, request.handle))
      return {
        skip: {
          reason: 'HandleInUse',
          message: `handle ${request.handle} already holds an address in block ${current.metadata.name}`,
        },
      };
    const done = allocateOrdinal(current, ordinal, ownerOf(request), ctx.clock());
    if (!done) return { skip: { reason: 'Reserved', message: `${text} cannot be allocated` } };
    return { write: done.block, result: describe(done.block, ordinal, done.allocation) };
  });
  if ('gone' in outcome)
    return {
      reason: 'Taken',
      message: `${text}: block ${got.block.metadata.name} was released concurrently; retry`,
    };
  return outcome.result;
}

/** A static address in a frozen block: `NotAllowed`, naming the block and each reason. */
function frozenRefusal(text: string, block: string, freezes: readonly Freeze[]): One {
  const why = freezes.map((f) => `${f.reason}: ${f.message}`).join('; ');
  return {
    reason: 'NotAllowed',
    message: `${text}: block ${block} is frozen (routed and releasable, not allocated from): ${why}`,
  };
}

/** The usable pool holding `ip` that this pod on this node may use. */
function findAllowedPool(
  inputs: Inputs,
  text: string,
  ip: IP,
): IPPool | { reason: AssignFailure; message: string } {
  const holder =
    inputs.snapshot.usable.find((p) => cidrContains(poolCidr(p), ip)) ??
    inputs.snapshot.pools.find((p) => cidrContains(poolCidr(p), ip));
  if (!holder) return { reason: 'NotInPool', message: `${text} is not in any IP pool` };
  const allowed = selectPools(inputs.snapshot, {
    family: ip.family,
    nodeLabels: inputs.nodeLabels,
    namespaceLabels: inputs.namespaceLabels,
    requested: [holder.metadata.name],
  });
  if ('refused' in allowed)
    return {
      reason: allowed.disabled ? 'PoolDisabled' : 'NotInPool',
      message: `${text}: ${requestRefusedText(allowed.refused, inputs)}`,
    };
  const pool = allowed.pools[0];
  return pool ?? { reason: 'NotInPool', message: `${text} is not in a usable IP pool` };
}

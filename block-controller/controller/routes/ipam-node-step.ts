/**
 * The IPAMNode step (docs/design-controller.md §IPAMNode): core's planIPAMNodes over the watched
 * blocks, pools and Nodes, and one IPAMNode per Node kept equal to it — created when missing,
 * replaced (compare-and-swap on the watched resourceVersion) when its lists or its owner changed,
 * deleted when its Node is gone (Kubernetes' garbage collector does that too, through the
 * ownerReference; a cluster without it still loses no stale route source). A 409 or 404 leaves
 * the object to the next pass, which judges the new one. Trusted blocks that hold a node's
 * address get no route: logged and an Event once per change, the gauge
 * `blockipam_ipam_blocks_unrouted{reason}` on every pass.
 */
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  planIPAMNodes,
  rfc3339,
  sameIPAMNodeSpec,
} from 'blockipam/core';
import type { IPAMNode, OwnerReference, UnroutedBlock } from 'blockipam/core';
import type { PassContext } from '../pass.ts';
import type { WatchedNode } from '../view.ts';

export interface IPAMNodeStep {
  created: string[];
  updated: string[];
  deleted: string[];
  /** Trusted blocks given no route (they hold a node's address), by name. */
  unrouted: string[];
}

/** Runs the step; `unroutedBefore` carries the last pass's unrouted blocks (for change-only logs). */
export async function ipamNodeStep(ctx: PassContext, unroutedBefore: Set<string>): Promise<IPAMNodeStep> {
  const nodes = ctx.view.nodes();
  const plan = planIPAMNodes(ctx.view.blocks(), ctx.view.pools(), nodes);
  const result: IPAMNodeStep = { created: [], updated: [], deleted: [], unrouted: [] };
  reportUnrouted(ctx, plan.unrouted, unroutedBefore, result);
  const store = ctx.ipamNodes;
  if (!store) return result;
  const existing = new Map(ctx.view.ipamNodes().map((n) => [n.metadata.name, n]));
  for (const node of nodes) {
    const name = node.metadata.name;
    const spec = plan.specs.get(name);
    if (!spec || !ctx.mayWrite()) continue;
    const have = existing.get(name);
    const owner = ownerOf(node);
    const next: IPAMNode = {
      metadata: { name, ...(owner ? { ownerReferences: [owner] } : {}) },
      spec: { ...spec, updatedAt: rfc3339(ctx.clock()) },
    };
    if (!have) {
      if (await write(ctx, name, () => store.create(next))) result.created.push(name);
    } else if (!sameIPAMNodeSpec(have.spec, spec) || !sameOwner(have, owner)) {
      // An owner change alone (the Node re-created under its name) keeps the spec and its time.
      const update: IPAMNode = {
        ...have,
        metadata: { ...have.metadata, ...next.metadata },
        spec: sameIPAMNodeSpec(have.spec, spec) ? have.spec : next.spec,
      };
      if (await write(ctx, name, () => store.update(update))) result.updated.push(name);
    }
  }
  const live = new Set(nodes.map((n) => n.metadata.name));
  for (const [name, have] of existing) {
    if (live.has(name) || !ctx.mayWrite()) continue;
    const preconditions = {
      ...(have.metadata.uid ? { uid: have.metadata.uid } : {}),
      ...(have.metadata.resourceVersion ? { resourceVersion: have.metadata.resourceVersion } : {}),
    };
    if (await write(ctx, name, () => store.delete(name, preconditions))) result.deleted.push(name);
  }
  for (const [op, names] of [
    ['create', result.created],
    ['update', result.updated],
    ['delete', result.deleted],
  ] as const)
    if (names.length > 0) {
      ctx.metrics?.ipamNodeWrites.inc({ op }, names.length);
      ctx.log.debug(`IPAMNodes ${op}d`, { nodes: names });
    }
  return result;
}

/** One write; a 409 / 404 / 409-exists leaves it to the next pass. @returns true when written */
async function write(ctx: PassContext, name: string, call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (error) {
    if (isConflict(error) || isNotFound(error) || isAlreadyExists(error)) return false;
    ctx.onApiError?.('ipamnode', error);
    ctx.log.warn('IPAMNode not written; retried next pass', { node: name, error: String(error) });
    return false;
  }
}

/** The Node as the IPAMNode's owner (absent while the watch holds no uid: then no owner). */
function ownerOf(node: WatchedNode): OwnerReference | undefined {
  const uid = node.metadata.uid;
  return uid ? { apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid } : undefined;
}

function sameOwner(have: IPAMNode, owner: OwnerReference | undefined): boolean {
  const refs = have.metadata.ownerReferences ?? [];
  return owner === undefined || (refs.length === 1 && refs[0]?.uid === owner.uid);
}

/** Gauge every pass; a log line and an Event per block that became (or stopped being) unrouted. */
function reportUnrouted(
  ctx: PassContext,
  unrouted: readonly UnroutedBlock[],
  before: Set<string>,
  result: IPAMNodeStep,
): void {
  ctx.metrics?.blocksUnrouted.set({ reason: 'covers-node-address' }, unrouted.length);
  const now = new Set(unrouted.map((u) => u.block.metadata.name));
  for (const { block, node } of unrouted) {
    result.unrouted.push(block.metadata.name);
    if (before.has(block.metadata.name)) continue;
    const note = `no route for ${block.spec.cidr} or its borrowed addresses: it holds an address of node ${node}`;
    ctx.log.warn('block unrouted', { block: block.metadata.name, cidr: block.spec.cidr, node });
    ctx.events.emit({
      kind: 'IPAMBlock',
      name: block.metadata.name,
      ...(block.metadata.uid ? { uid: block.metadata.uid } : {}),
      type: 'Warning',
      reason: 'BlockUnroutedCoversNodeAddress',
      action: 'Route',
      note,
    });
  }
  for (const name of before)
    if (!now.has(name)) ctx.log.info('block routed again (or gone)', { block: name });
  before.clear();
  for (const name of now) before.add(name);
}

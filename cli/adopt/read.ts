/**
 * What `ipamctl adopt plan` reads: every IPAMBlock, IPPool, IPReservation, Node and Pod, each one
 * paginated LIST through the Datastore port (core's listAll), nothing written. Of each Node only
 * its name, labels and podCIDRs are kept, of each Pod only what the plan reads.
 */
import type { AdoptionInput, Datastore, Node, Page, PodCIDRNode } from 'blockipam/core';
import { auditPod, POD_PAGE_SIZE, readAll } from '../audit/snapshot.ts';
import type { Progress } from '../audit/snapshot.ts';

/**
 * The plan's input from one LIST of each kind (blocks first, then the rest in parallel; pods cut
 * as check keeps them, its AuditPod).
 * @throws what the Datastore's LISTs throw (an unreachable API server, CRDs not installed, 403)
 */
export async function readAdoptionInput(ds: Datastore, progress?: Progress): Promise<AdoptionInput> {
  const { items: blocks } = await readAll((o) => ds.blocks.listPage(o), 'ipamblocks', progress);
  const [pools, reservations, nodes, pods] = await Promise.all([
    readAll((o) => ds.pools.listPage(o), 'ippools', progress),
    readAll((o) => ds.reservations.listPage(o), 'ipreservations', progress),
    readAll(async (o) => slim(await ds.listNodePage(o), podCIDRNode), 'nodes', progress),
    readAll(async (o) => slim(await ds.listPodPage(o), auditPod), 'pods', progress, POD_PAGE_SIZE),
  ]);
  return {
    blocks,
    pools: pools.items,
    reservations: reservations.items,
    nodes: nodes.items,
    pods: pods.items,
  };
}

function slim<T, U>(page: Page<T>, cut: (item: T) => U): Page<U> {
  return { ...page, items: page.items.map(cut) };
}

/**
 * A Node's name, labels and podCIDRs. The port types a Node by the metadata the IPAM reads; the
 * object the API server sends carries its spec, which the API server validated.
 */
function podCIDRNode(node: Node): PodCIDRNode {
  const { name, labels } = node.metadata;
  const spec = (node as PodCIDRNode).spec;
  return {
    metadata: { name, ...(labels ? { labels } : {}) },
    ...(spec
      ? {
          spec: {
            ...(spec.podCIDR ? { podCIDR: spec.podCIDR } : {}),
            ...(spec.podCIDRs ? { podCIDRs: spec.podCIDRs } : {}),
          },
        }
      : {}),
  };
}

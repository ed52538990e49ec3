/**
 * What `ipamctl adopt plan` reads: every IPAMBlock, IPPool, IPReservation, Node and Pod, each one
 * paginated LIST through the Datastore port (core's listAll), nothing written. Of each Node only
 * its name, labels and podCIDRs are kept, of each Pod only what the plan reads.
 */
import { listAll } from 'blockipam/core';
import type { AdoptionInput, Datastore, Node, Page, PageOptions, Pod, PodCIDRNode } from 'blockipam/core';

/** Told after each page: the kind (`pods`) and how many of it were read so far. */
export type Progress = (kind: string, count: number) => void;

// 2,000 pods per page, as check reads them: the API server copies the rest of the list for every
// page it serves, so larger pod pages cut its CPU (docs/design-cli.md §Cost of check).
const POD_PAGE_SIZE = 2000;

/**
 * The plan's input from one LIST of each kind (blocks first, then the rest in parallel).
 * @throws what the Datastore's LISTs throw (an unreachable API server, CRDs not installed, 403)
 */
export async function readAdoptionInput(ds: Datastore, progress?: Progress): Promise<AdoptionInput> {
  const read = async <T>(kind: string, listPage: (o: PageOptions) => Promise<Page<T>>, limit?: number) =>
    (await listAll(listPage, { ...(limit ? { limit } : {}), onPage: (count) => progress?.(kind, count) }))
      .items;
  const blocks = await read('ipamblocks', (o) => ds.blocks.listPage(o));
  const [pools, reservations, nodes, pods] = await Promise.all([
    read('ippools', (o) => ds.pools.listPage(o)),
    read('ipreservations', (o) => ds.reservations.listPage(o)),
    read('nodes', async (o) => slim(await ds.listNodePage(o), podCIDRNode)),
    read('pods', async (o) => slim(await ds.listPodPage(o), planPod), POD_PAGE_SIZE),
  ]);
  return { blocks, pools, reservations, nodes, pods };
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

/** A Pod's name, namespace, node, hostNetwork, phase and addresses. */
function planPod(pod: Pod): Pod {
  const { name, namespace } = pod.metadata;
  const { spec, status } = pod;
  return {
    metadata: { name, ...(namespace ? { namespace } : {}) },
    ...(spec ? { spec: { nodeName: spec.nodeName, hostNetwork: spec.hostNetwork } } : {}),
    ...(status ? { status: { phase: status.phase, podIP: status.podIP, podIPs: status.podIPs } } : {}),
  };
}

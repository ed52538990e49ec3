/**
 * The route planner: a pure function from the cluster's blocks and nodes to the routes this
 * node should hold (docs/design-agent.md "Routes"). Direct routing, as flannel's host-gw and
 * Cilium's auto-direct-node-routes: nodes share an L2 segment, and a node reaches another
 * node's pods through that node's InternalIP.
 *
 * For node N (this node) and every IPAMBlock B:
 * - B affine to another node M: `B.cidr via InternalIP(M)` (the InternalIP of B's family).
 * - B affine to N: `blackhole B.cidr` (Calico does the same for its local blocks): N's pods have
 *   ptp's /32 (/128) routes to their veths, which are more specific; an unallocated address of
 *   B is dropped here instead of following N's default route out.
 * - B unowned (affinity null): no block route.
 * - B not trusted (core's classifyBlocks: outside every pool, not in the pool its label names,
 *   not of that pool's blockSize, labels that differ from its spec, or overlapping an older
 *   trusted block), or holding a node's address: no route at all, neither for the block nor for
 *   its borrowed addresses; skipped with the reason (an IPAMBlock is accepted by the API server
 *   whatever its CIDR; a route for 10.99.0.0/26 over the nodes' own network cut every node off
 *   its API server in a fresh-user test, and a /28 created inside another node's /26 would
 *   route that node's pods to its author: issue 23, D1).
 * - Every allocation of B whose `node` P differs from B's affinity (a borrowed address) and
 *   from N: `address/32 (/128) via InternalIP(P)` — every node except the borrower needs it,
 *   B's owner included (its own block route would send the address nowhere, or the blackhole).
 *   On the borrower itself ptp's host route to the veth already wins over B's block route.
 */
import {
  addressTextAt,
  bitsOf,
  cidrContains,
  classifyBlocks,
  formatCidr,
  formatIP,
  mustParseCidr,
  parseIP,
} from 'blockipam/core';
import type { Cidr, IPFamily } from 'blockipam/core';
import type { DesiredRoute, RouteNode, RouteView, SkippedRoute } from './types.ts';

export interface PlanOptions {
  /** This node's Kubernetes name (the blocks' `spec.affinity` for its own blocks). */
  readonly nodeName: string;
  /** Blackhole routes for this node's own blocks. Default true. */
  readonly blackholeOwnBlocks?: boolean;
}

/**
 * The planner refuses to plan (`ready: false`) until the view is trustworthy: the informers
 * have not synced, or this node's own Node object is not in the view (a view without the node
 * it runs on is an empty or partial cache, never the real cluster).
 */
export type Plan =
  | { readonly ready: false; readonly why: 'not-synced' | 'own-node-missing' }
  | {
      readonly ready: true;
      /** Sorted by destination; one route per destination. */
      readonly routes: readonly DesiredRoute[];
      readonly skipped: readonly SkippedRoute[];
    };

/** Plans the routes of node `options.nodeName` from `view`. Pure; never throws. */
export function planRoutes(view: RouteView, options: PlanOptions): Plan {
  if (!view.synced) return { ready: false, why: 'not-synced' };
  const me = options.nodeName;
  const nodes = new Map(view.nodes.map((n) => [n.metadata.name, n]));
  if (!nodes.has(me)) return { ready: false, why: 'own-node-missing' };
  const routes = new Map<string, DesiredRoute>();
  const skipped: SkippedRoute[] = [];
  const want = (route: DesiredRoute): void => {
    if (routes.has(route.dst))
      skipped.push({ block: route.block, dst: route.dst, node: route.node ?? me, why: 'duplicate-dst' });
    else routes.set(route.dst, route);
  };
  const via = (
    block: string,
    dst: string,
    family: IPFamily,
    node: string,
    reason: 'block' | 'borrowed',
  ): void => {
    const found = nodes.get(node);
    const gateway = found && internalIP(found, family);
    if (gateway) want({ dst, family, type: 'unicast', gateway, reason, block, node });
    else skipped.push({ block, dst, node, why: found ? 'no-internal-ip' : 'node-unknown' });
  };
  const nodeAddresses = view.nodes.flatMap((n) =>
    (n.status?.addresses ?? []).map((a) => parseIP(a.address)).filter((ip) => ip !== undefined),
  );
  const { trusted, ignored } = classifyBlocks(view.blocks, view.pools);
  for (const { block, reason, message } of ignored)
    skipped.push({
      block: block.metadata.name,
      dst: block.spec.cidr,
      node: block.spec.affinity ?? '',
      why: reason,
      message,
    });
  for (const block of trusted) {
    const cidr = mustParseCidr(block.spec.cidr); // trusted: a masked CIDR
    const name = block.metadata.name;
    const dst = formatCidr(cidr);
    const affinity = block.spec.affinity;
    if (nodeAddresses.some((ip) => cidrContains(cidr, ip))) {
      skipped.push({ block: name, dst, node: affinity ?? '', why: 'covers-node-address' });
      continue;
    }
    if (affinity === me) {
      if (options.blackholeOwnBlocks ?? true)
        want({ dst, family: cidr.family, type: 'blackhole', reason: 'own-block', block: name });
    } else if (affinity !== null) {
      via(name, dst, cidr.family, affinity, 'block');
    }
    for (const [ordinal, allocation] of Object.entries(block.spec.allocations)) {
      if (allocation.node === affinity || allocation.node === me) continue;
      via(name, hostDst(cidr, Number(ordinal)), cidr.family, allocation.node, 'borrowed');
    }
  }
  const sorted = [...routes.values()].sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0));
  return { ready: true, routes: sorted, skipped };
}

/**
 * The node's first InternalIP of `family` in `status.addresses` (Kubernetes lists the primary
 * address first), in canonical text; undefined when it has none.
 */
export function internalIP(node: RouteNode, family: IPFamily): string | undefined {
  for (const a of node.status?.addresses ?? []) {
    if (a.type !== 'InternalIP') continue;
    const ip = parseIP(a.address);
    if (ip?.family === family) return formatIP(ip);
  }
  return undefined;
}

/** "address/32" or "address/128" for the ordinal of a block. */
function hostDst(block: Cidr, ordinal: number): string {
  return `${addressTextAt(block, ordinal)}/${bitsOf(block.family)}`;
}

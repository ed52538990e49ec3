/**
 * The route planner: a pure function from every node's IPAMNode (written by the cluster
 * controller, docs/design-controller.md §IPAMNode) and this node's own blocks to the routes this
 * node should hold (docs/design-agent.md §Routes). Direct routing, as flannel's host-gw and
 * Cilium's auto-direct-node-routes: nodes share an L2 segment, and a node reaches another node's
 * pods through that node's InternalIP.
 *
 * For node N (this node):
 * - every other node M's IPAMNode: `cidr via InternalIP(M)` for each of `spec.blocks`, and
 *   `address/32 (/128) via InternalIP(M)` for each of `spec.borrowed` (M's pods' addresses in
 *   other nodes' blocks, N's own included: N's blackhole would swallow them). The controller
 *   lists only blocks core's classifyBlocks trusts, judged over all blocks and pools, that hold
 *   no node's address: a block a node forged (an unowned /28 inside another node's /26, labels
 *   naming another node) never gets a route anywhere.
 * - N's own IPAMNode: nothing (its borrowed addresses are served by ptp's /32 to the veth).
 * - N's own trusted affine blocks (from the agent's watch of its own blocks, so a block it just
 *   claimed is covered at once): `blackhole cidr` (as Calico does for local blocks) — N's pods
 *   have ptp's more specific host routes; an unallocated address is dropped here instead of
 *   following N's default route out. Not for a block holding a node's address (any IPAMNode's,
 *   or any of N's own `status.addresses`).
 */
import {
  blockNameOf,
  cidrContains,
  formatCidr,
  parseCidr,
  parseIP,
  routeNextHop,
  trustedAffine,
} from 'blockipam/core';
import type { Cidr, IPAMNode } from 'blockipam/core';
import type { DesiredRoute, RouteView, SkippedRoute } from './types.ts';

export interface PlanOptions {
  /** This node's Kubernetes name (its IPAMNode's and its blocks' `spec.affinity`). */
  readonly nodeName: string;
  /** Blackhole routes for this node's own blocks. Default true. */
  readonly blackholeOwnBlocks?: boolean;
}

/**
 * The planner refuses to plan (`ready: false`) until the view is trustworthy: the informers
 * have not synced; this node's Node object is not in the view (an empty or partial cache, never
 * the real cluster); or this node's IPAMNode is missing (the controller has not yet seen this
 * node — a fresh install or an upgrade before the controller's first pass: routes installed
 * earlier stay rather than being taken down for want of a route source).
 */
export type Plan =
  | { readonly ready: false; readonly why: 'not-synced' | 'own-node-missing' | 'own-ipamnode-missing' }
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
  if (view.node?.metadata.name !== me) return { ready: false, why: 'own-node-missing' };
  if (!view.ipamNodes.some((n) => n.metadata.name === me))
    return { ready: false, why: 'own-ipamnode-missing' };
  const routes = new Map<string, DesiredRoute>();
  const skipped: SkippedRoute[] = [];
  const want = (route: DesiredRoute): void => {
    if (routes.has(route.dst))
      skipped.push({
        block: route.block ?? '',
        dst: route.dst,
        node: route.node ?? me,
        why: 'duplicate-dst',
      });
    else routes.set(route.dst, route);
  };
  const nodeAddresses = [
    ...view.ipamNodes.flatMap((n) => n.spec.addresses),
    ...(view.node.status?.addresses ?? []).map((a) => a.address),
  ].flatMap((text) => parseIP(text) ?? []);
  for (const block of trustedAffine(view.blocks, view.pools, me)) {
    const cidr = parseCidr(block.spec.cidr) as Cidr; // trusted: a masked CIDR
    const dst = formatCidr(cidr);
    if (nodeAddresses.some((ip) => cidrContains(cidr, ip)))
      skipped.push({ block: block.metadata.name, dst, node: me, why: 'covers-node-address' });
    else if (options.blackholeOwnBlocks ?? true)
      want({ dst, family: cidr.family, type: 'blackhole', reason: 'own-block', block: block.metadata.name });
  }
  const others = view.ipamNodes
    .filter((n) => n.metadata.name !== me)
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const node of others) {
    for (const text of node.spec.blocks) via(node, text, 'block');
    for (const text of node.spec.borrowed) via(node, text, 'borrowed');
  }
  const sorted = [...routes.values()].sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0));
  return { ready: true, routes: sorted, skipped };

  function via(node: IPAMNode, text: string, reason: 'block' | 'borrowed'): void {
    const name = node.metadata.name;
    const cidr = parseCidr(text);
    if (!cidr) {
      skipped.push({ block: '', dst: text, node: name, why: 'invalid-cidr' });
      return;
    }
    const dst = formatCidr(cidr);
    const block = reason === 'block' ? { block: blockNameOf(cidr) } : {};
    const gateway = routeNextHop(node.spec.addresses, cidr.family); // core's rule, as ipamctl's
    if (gateway) want({ dst, family: cidr.family, type: 'unicast', gateway, reason, node: name, ...block });
    else skipped.push({ block: block.block ?? '', dst, node: name, why: 'no-internal-ip' });
  }
}

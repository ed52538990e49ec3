/**
 * One rule for whether other nodes can route to a node's pods (docs/design-agent.md §Routes):
 * direct routing sends a destination of family F to the node's InternalIP of family F — an IPv6
 * block needs an IPv6 InternalIP; no IPv4 next hop carries IPv6. The agent's route planner
 * applies it to every other node's IPAMNode; `ipamctl show --node` applies it to the node
 * shown, so both say the same of the same node. Pure.
 */
import { parseCidr, parseIP } from '../address/ip.ts';
import type { IPFamily } from '../address/ip.ts';
import type { IPAMNodeSpec } from '../resources.ts';

/** Why other nodes have no route to a destination of a node: it has no InternalIP of the family. */
type UnroutableReason = 'no-internal-ip';

/**
 * The next hop other nodes use for a node's destinations of `family`: its first address of that
 * family in `addresses` (an IPAMNode's `spec.addresses`: the Node's first InternalIP of each
 * family, canonical text). Undefined when it has none: those destinations get no route
 * (`no-internal-ip`).
 */
export function routeNextHop(addresses: readonly string[], family: IPFamily): string | undefined {
  return addresses.find((a) => parseIP(a)?.family === family);
}

/** A destination of a node (a block, or a borrowed address) that no other node can route to. */
export interface UnroutableDestination {
  /** CIDR text as the IPAMNode lists it ("fd00::40/122", "fd00::41/128"). */
  readonly dst: string;
  readonly family: IPFamily;
  /** From `spec.blocks` (an affine block) or `spec.borrowed` (an address in another node's block). */
  readonly source: 'block' | 'borrowed';
  readonly reason: UnroutableReason;
}

/**
 * The destinations of one node's IPAMNode that other nodes cannot route to ({@link routeNextHop}
 * finds no next hop of their family), in the spec's order. Entries that are no CIDR are left to
 * the caller (the controller never writes one).
 */
export function unroutableDestinations(
  spec: Pick<IPAMNodeSpec, 'addresses' | 'blocks' | 'borrowed'>,
): UnroutableDestination[] {
  const out: UnroutableDestination[] = [];
  const check = (dst: string, source: 'block' | 'borrowed'): void => {
    const family = parseCidr(dst, { strict: false })?.family;
    if (family !== undefined && routeNextHop(spec.addresses, family) === undefined)
      out.push({ dst, family, source, reason: 'no-internal-ip' });
  };
  for (const dst of spec.blocks) check(dst, 'block');
  for (const dst of spec.borrowed) check(dst, 'borrowed');
  return out;
}

/**
 * What to tell the operator about a node without an InternalIP of `family` (the agent's log line
 * and `ipamctl show --node` use it): which node, which family, and the fix.
 */
export function noInternalIPMessage(node: string, family: IPFamily): string {
  return `node ${node} has no IPv${family} InternalIP (Node status.addresses): other nodes have no next hop for its IPv${family} blocks and borrowed addresses, so pods elsewhere cannot reach its IPv${family} pods; give the node an IPv${family} InternalIP (e.g. kubelet --node-ip with an address of each family)`;
}

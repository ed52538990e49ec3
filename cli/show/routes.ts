/**
 * `ipamctl show --node N` (pure part): which of N's blocks other nodes cannot route to, and why —
 * by core's rule (routes/reachability.ts), the one every agent's route planner applies to N's
 * IPAMNode (docs/design-agent.md §Routes). Other nodes route N's blocks from N's IPAMNode,
 * written by the controller: a block it does not list gets no route anywhere, and a listed one
 * of a family N has no InternalIP of gets none either.
 */
import { blockNameOf, noInternalIPMessage, parseCidr, unroutableDestinations } from 'blockipam/core';
import type { IPAMBlock, IPAMNode, IPFamily } from 'blockipam/core';

/** One of the node's destinations (a block, or a borrowed address) that other nodes do not route. */
interface UnroutedDestination {
  /** CIDR text ("fd00::40/122", "10.0.0.70/32"). */
  dst: string;
  /** The IPAMBlock, for a block (a borrowed address names none). */
  block?: string;
  family: IPFamily | undefined;
  /**
   * `no-internal-ip`: the node has no InternalIP of the family (core's rule); `no-ipamnode`: the
   * controller has not written the node's IPAMNode; `not-in-ipamnode`: its IPAMNode does not list
   * the block.
   */
  reason: 'no-internal-ip' | 'no-ipamnode' | 'not-in-ipamnode';
  message: string;
}

export interface NodeRouting {
  /** The node's IPAMNode exists. */
  ipamNode: boolean;
  /** The next hops other nodes use (its IPAMNode's `spec.addresses`). */
  addresses: string[];
  unrouted: UnroutedDestination[];
}

/** How other nodes route to `node`'s blocks (`affine`: its affine blocks; `ipamNode`: its IPAMNode, if any). */
export function nodeRouting(input: {
  node: string;
  ipamNode: IPAMNode | undefined;
  affine: readonly IPAMBlock[];
}): NodeRouting {
  const { node, ipamNode } = input;
  const familyOf = (cidr: string): IPFamily | undefined => parseCidr(cidr, { strict: false })?.family;
  const affine = [...input.affine].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  if (!ipamNode)
    return {
      ipamNode: false,
      addresses: [],
      unrouted: affine.map((b) => ({
        dst: b.spec.cidr,
        block: b.metadata.name,
        family: familyOf(b.spec.cidr),
        reason: 'no-ipamnode',
        message: `no IPAMNode ${node}: the controller has not written one (not running, or the node is new), so no other node routes to this node's blocks yet`,
      })),
    };
  const listed = new Set(ipamNode.spec.blocks);
  const notListed: UnroutedDestination[] = affine
    .filter((b) => !listed.has(b.spec.cidr))
    .map((b) => ({
      dst: b.spec.cidr,
      block: b.metadata.name,
      family: familyOf(b.spec.cidr),
      reason: 'not-in-ipamnode',
      message: `not in IPAMNode ${node}: the controller routes only blocks core trusts that hold no node's address (ipamctl check names why), and lists a new claim within about a second`,
    }));
  const noHop: UnroutedDestination[] = unroutableDestinations(ipamNode.spec).map((d) => {
    const cidr = parseCidr(d.dst, { strict: false });
    return {
      dst: d.dst,
      ...(d.source === 'block' && cidr ? { block: blockNameOf(cidr) } : {}),
      family: d.family,
      reason: d.reason,
      message: noInternalIPMessage(node, d.family),
    };
  });
  return { ipamNode: true, addresses: [...ipamNode.spec.addresses], unrouted: [...noHop, ...notListed] };
}

/** Turns a block + ordinal into the address descriptions the API returns. */
import { addressTextAt, gatewayOf } from '../address/block-cidr.ts';
import { formatIP } from '../address/ip.ts';
import { cidrOf, poolOf } from '../block/block.ts';
import type { Allocation, IPAMBlock } from '../resources.ts';
import type { AllocatedAddress, AssignedAddress } from './types.ts';

/** The address at `ordinal` of `block`, held by `allocation`. */
export function describe(block: IPAMBlock, ordinal: number, allocation: Allocation): AllocatedAddress {
  const cidr = cidrOf(block);
  const assigned: AssignedAddress = {
    family: cidr.family,
    address: addressTextAt(cidr, ordinal),
    prefixLength: cidr.prefixLength,
    gateway: formatIP(gatewayOf(cidr)),
    block: block.metadata.name,
    blockCidr: block.spec.cidr,
    pool: poolOf(block),
    ordinal,
    sequence: allocation.sequence,
    borrowed: block.spec.affinity !== allocation.node,
  };
  return { ...assigned, allocation };
}

/** The public part (without the allocation record). */
export function assigned(address: AllocatedAddress): AssignedAddress {
  const { allocation: _allocation, ...rest } = address;
  return rest;
}

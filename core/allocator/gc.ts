/**
 * CNI GC support (CNI spec 1.1.0 GC): release this node's allocations of one network whose
 * attachment is not among the valid ones. Every release carries the sequence number read, so an
 * address re-allocated meanwhile is left alone.
 */
import type { Datastore } from '../datastore/datastore.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions } from './context.ts';
import { listNodeAllocations, releaseAddresses } from './release.ts';
import type { AddressReleaseResult } from './release.ts';
import { handleOf } from './types.ts';
import type { AllocatedAddress } from './types.ts';

/** A live attachment (`cni.dev/valid-attachments` entry). */
export interface Attachment {
  containerID: string;
  ifname: string;
}

/** What a GC run may release. */
export interface GcRequest {
  node: string;
  /** CNI network name: only this network's allocations are considered. */
  network: string;
  /** Attachments that must keep their addresses. */
  validAttachments: readonly Attachment[];
}

/** True when `allocation` belongs to `network` (stored network, else the handle's prefix). */
function ofNetwork(address: AllocatedAddress, network: string): boolean {
  const stored = address.allocation.network;
  return stored !== undefined ? stored === network : address.allocation.handle.startsWith(`${network}.`);
}

/**
 * Releases `node`'s allocations of `network` whose handle matches no valid attachment.
 * Borrowed allocations (in other nodes' or unowned blocks) are found too: the LIST selects the
 * node's label, which every block holding one of its allocations carries.
 * Cost: 1 LIST + 1 GET + 1 UPDATE per block touched. `gone`: stale allocations released meanwhile.
 */
export async function releaseForGC(
  ds: Datastore,
  request: GcRequest,
  options: AllocatorOptions = {},
): Promise<AddressReleaseResult> {
  const ctx = contextOf(ds, options);
  const valid = new Set(
    request.validAttachments.map((a) => handleOf(request.network, a.containerID, a.ifname)),
  );
  const stale = (await listNodeAllocations(ctx.ds, request.node)).filter(
    (a) => ofNetwork(a, request.network) && !valid.has(a.allocation.handle),
  );
  return releaseAddresses(
    ds,
    stale.map((a) => ({
      address: a.address,
      handle: a.allocation.handle,
      sequence: a.sequence,
      block: a.block,
    })),
    { node: request.node },
    ctx,
  );
}

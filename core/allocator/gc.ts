/**
 * CNI GC support (CNI spec 1.1.0 GC): release this node's allocations of one network whose
 * attachment is not among the valid ones. Every release carries the sequence number read, so an
 * address re-allocated meanwhile is left alone. An allocation whose pod (by UID) is alive on
 * another node with that address is never released (calico #12257: an ADD recorded under the
 * wrong node name; this node's runtime does not know the attachment, the pod's own node uses it).
 */
import type { Datastore } from '../datastore/datastore.ts';
import type { Pod } from '../resources.ts';
import { contextOf } from './context.ts';
import type { AllocatorOptions } from './context.ts';
import { listNodeAllocations, releaseAddresses } from './release.ts';
import type { AddressRelease, AddressReleaseResult } from './release.ts';
import { isLivePod, podIPs } from './pod-liveness.ts';
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

/** Result of {@link releaseForGC}: a release result plus what the alive-pod rule kept. */
export interface GcResult extends AddressReleaseResult {
  /**
   * Stale by the valid attachments, kept: the pod the allocation names exists with its recorded
   * UID (or none was recorded), is live (not Succeeded / Failed, not host-network), runs on
   * another node than the GC's and reports this address. Nothing was written for them.
   */
  aliveElsewhere: AllocatedAddress[];
}

/** True when `allocation` belongs to `network` (stored network, else the handle's prefix). */
function ofNetwork(address: AllocatedAddress, network: string): boolean {
  const stored = address.allocation.network;
  return stored !== undefined ? stored === network : address.allocation.handle.startsWith(`${network}.`);
}

/**
 * Releases `node`'s allocations of `network` whose handle matches no valid attachment, except
 * those whose pod is alive on another node with that address ({@link GcResult.aliveElsewhere}).
 * Borrowed allocations (in other nodes' or unowned blocks) are found too: the LIST selects the
 * node's label, which every block holding one of its allocations carries.
 * Cost: 1 LIST + 1 pod GET per distinct pod the stale allocations name + 1 UPDATE per block
 * touched. `gone`: stale allocations released meanwhile; `failed`: items whose pod could not be
 * read or whose block could not be written (nothing written for them).
 * @throws what the LIST throws (nothing released); the signal's reason once it fires
 */
export async function releaseForGC(
  ds: Datastore,
  request: GcRequest,
  options: AllocatorOptions = {},
): Promise<GcResult> {
  const ctx = contextOf(ds, options);
  const valid = new Set(
    request.validAttachments.map((a) => handleOf(request.network, a.containerID, a.ifname)),
  );
  const stale = (await listNodeAllocations(ctx.ds, request.node)).filter(
    (a) => ofNetwork(a, request.network) && !valid.has(a.allocation.handle),
  );
  const itemOf = (a: AllocatedAddress): AddressRelease => ({
    address: a.address,
    handle: a.allocation.handle,
    sequence: a.sequence,
    block: a.block,
  });
  const aliveElsewhere: AllocatedAddress[] = [];
  const unreadable: { item: AddressRelease; error: Error }[] = [];
  const release: AllocatedAddress[] = [];
  const pods = new Map<string, Promise<Pod | undefined>>();
  for (const a of stale) {
    const { namespace, pod } = a.allocation;
    if (!namespace || !pod) {
      release.push(a);
      continue;
    }
    const key = `${namespace}/${pod}`;
    if (!pods.has(key)) pods.set(key, ctx.ds.getPod(namespace, pod));
    try {
      const found = await pods.get(key);
      if (found && usesElsewhere(found, a, request.node)) aliveElsewhere.push(a);
      else release.push(a);
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      unreadable.push({ item: itemOf(a), error: error as Error });
    }
  }
  const result = await releaseAddresses(ds, release.map(itemOf), { node: request.node }, ctx);
  return { ...result, failed: [...unreadable, ...result.failed], aliveElsewhere };
}

/** The pod is the allocation's (same UID, or none recorded), live, on another node, with this address. */
function usesElsewhere(pod: Pod, a: AllocatedAddress, node: string): boolean {
  const uid = a.allocation.podUID;
  if (uid && pod.metadata.uid && pod.metadata.uid !== uid) return false;
  const podNode = pod.spec?.nodeName;
  return (
    isLivePod(pod) &&
    podNode !== undefined &&
    podNode !== '' &&
    podNode !== node &&
    podIPs(pod).includes(a.address)
  );
}

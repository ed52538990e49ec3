/**
 * Is an allocation leaked? (pure; Calico kube-controllers' allocationIsValid
 * made stricter by identity = handle + pod UID). Any doubt means "keep":
 *
 * | allocation                                      | verdict                         |
 * | ----------------------------------------------- | ------------------------------- |
 * | a live pod reports its address (any pod, any node — calico #12257) | keep            |
 * | names a pod that exists with the same UID (or records no UID)      | keep (even if its node is gone: the pod GC deletes such pods first) |
 * | names a pod that exists with another UID        | `pod-uid-differs` (StatefulSet pods return with the same name) |
 * | names a pod that does not exist                 | `pod-gone`                      |
 * | names no pod                                    | keep, unless its node is gone   |
 * | any of the leaks above, and its node is gone    | `node-gone`                     |
 *
 * `pod-gone` and `pod-uid-differs` wait `leakGracePeriodSeconds` (a CNI DEL may still come);
 * `node-gone` waits for its node's quarantine instead (gc/gone-nodes.ts: its kubelet and
 * sandboxes may still run), then goes at once (no kubelet is left to send a DEL).
 */
import type { Allocation } from 'blockipam/core';
import type { OwnerIndex } from './owners.ts';

export type LeakReason = 'pod-gone' | 'pod-uid-differs' | 'node-gone';

/** The verdict on the allocation of `address` (canonical text): a leak reason, or undefined = keep. */
export function leakReason(
  allocation: Allocation,
  address: string,
  owners: OwnerIndex,
): LeakReason | undefined {
  const leak = ownerLeak(allocation, owners);
  if (leak === undefined) return undefined;
  // Someone uses the address (another pod, maybe on another node): releasing it would let the
  // IPAM hand it out twice. Kept until that pod is gone.
  if (owners.ipUsers(address).length > 0) return undefined;
  return owners.nodeExists(allocation.node) && leak !== 'ownerless' ? leak : 'node-gone';
}

/** The owner part of the verdict, before the address and node checks. */
function ownerLeak(
  allocation: Allocation,
  owners: OwnerIndex,
): 'pod-gone' | 'pod-uid-differs' | 'ownerless' | undefined {
  if (!allocation.namespace || !allocation.pod)
    return owners.nodeExists(allocation.node) ? undefined : 'ownerless';
  const pod = owners.pod(allocation.namespace, allocation.pod);
  if (!pod) return 'pod-gone';
  if (allocation.podUID && pod.metadata.uid && pod.metadata.uid !== allocation.podUID)
    return 'pod-uid-differs';
  return undefined;
}

/**
 * The fresh re-check immediately before a release (Calico's garbageCollectKnownLeaks
 * re-validates each leak first): the watches said "leaked", the API
 * server must agree now. One GET per pod named and one per node concerned (memoised for one
 * pass), so the cost grows with the leaks, not with the cluster. Any error means "keep".
 */
import type { Datastore } from 'blockipam/core';
import { isLivePod, podIPs } from './owners.ts';
import type { WatchedPod } from './owners.ts';
import type { LeakCandidate } from './scan.ts';

/** Why a handle is kept after the re-check (undefined: confirmed leaked). */
export type KeepReason = 'pod-exists' | 'address-in-use' | 'node-exists' | 'api-error';

/** Memoised reads of one pass; a failed read is remembered as failed. */
export class FreshReads {
  readonly #ds: Datastore;
  readonly #pods = new Map<string, Promise<WatchedPod | undefined>>();
  readonly #nodes = new Map<string, Promise<boolean>>();

  constructor(ds: Datastore) {
    this.#ds = ds;
  }

  pod(namespace: string, name: string): Promise<WatchedPod | undefined> {
    const key = `${namespace}/${name}`;
    let read = this.#pods.get(key);
    if (!read) this.#pods.set(key, (read = this.#ds.getPod(namespace, name)));
    return read;
  }

  nodeExists(name: string): Promise<boolean> {
    let read = this.#nodes.get(name);
    if (!read) this.#nodes.set(name, (read = this.#ds.getNode(name).then((node) => node !== undefined)));
    return read;
  }
}

/**
 * Re-checks one allocation against the API server. Keeps it when its pod exists with its UID
 * (or it recorded none), when the pod of that name is alive with this very address, or — for a
 * `node-gone` leak — when the node exists after all (then the pod-gone grace applies instead).
 */
async function recheck(candidate: LeakCandidate, reads: FreshReads): Promise<KeepReason | undefined> {
  try {
    const { namespace, pod: name, podUID, node } = candidate.allocation;
    if (namespace && name) {
      const pod = await reads.pod(namespace, name);
      if (pod) {
        if (!podUID || !pod.metadata.uid || pod.metadata.uid === podUID) return 'pod-exists';
        if (isLivePod(pod) && podIPs(pod).includes(candidate.address)) return 'address-in-use';
      }
    }
    if (candidate.reason === 'node-gone' && (await reads.nodeExists(node))) return 'node-exists';
    return undefined;
  } catch {
    return 'api-error';
  }
}

/** Re-checks every allocation of a handle: the handle is confirmed only if all of them are. */
export async function recheckHandle(
  handle: readonly LeakCandidate[],
  reads: FreshReads,
): Promise<KeepReason | undefined> {
  const reasons = await Promise.all(handle.map((candidate) => recheck(candidate, reads)));
  return reasons.find((reason) => reason !== undefined);
}

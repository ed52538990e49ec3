/**
 * The plugin's port to the IPAM: everything the CNI commands need from the allocator and the
 * datastore, in the protocol's terms. `kube-backend.ts` implements it on core's allocator and
 * Kubernetes datastore; tests substitute fakes. Expected outcomes are values; an unreachable
 * datastore is a thrown {@link BackendUnavailableError} (reported as CNI code 11).
 */
import type { Attachment, IPFamily, PodRef } from 'blockipam/core';
import type { NetConf } from '../cni/netconf.ts';
import type { CniCommand } from '../cni/env.ts';
import type {
  AddOutcome,
  AttachmentRef,
  CheckOutcome,
  GcOutcome,
  StatusOutcome,
} from 'blockipam/core/node-ipam/protocol';

/**
 * The outcome types are the node IPAM protocol's (docs/design-core.md §Node IPAM service): one
 * shape whether core-backend or the node agent decided. STATUS's `notReady` is not
 * "(un)available": that word is the datastore's (BackendUnavailableError, core's UnavailableError).
 */
export type { AddOutcome, AttachmentRef, CheckOutcome, GcOutcome, StatusOutcome };

export interface AddRequest {
  readonly attachment: AttachmentRef;
  /** The pod behind the attachment, from CNI_ARGS K8S_POD_* (absent outside Kubernetes). */
  readonly pod?: Readonly<PodRef>;
  readonly node: string;
  /** Families to auto-assign (ignored when `staticIPs` is non-empty). */
  readonly families: readonly IPFamily[];
  /** Pool names per family from the config; the backend may override them from annotations. */
  readonly pools: NetConf['pools'];
  /**
   * Static IPs from the invocation (runtimeConfig.ips > args.cni.ips > CNI_ARGS IP=), at most one
   * per family. Empty: the backend may take them from the pod annotation, else auto-assigns.
   */
  readonly staticIPs: readonly string[];
  /**
   * Runs the allocation step under the host lock with the time budget's signal (aborted
   * `timeoutMs` after the lock is held). Reads that need no lock (pod, namespace, snapshot)
   * belong before it, so the lock is held only for the compare-and-swap step.
   */
  readonly critical: <T>(
    step: (signal: AbortSignal, waited: boolean) => Promise<T>,
    /** Runs once when another process holds the lock, before the wait (an ADD queues its request). */
    beforeWait?: () => void,
  ) => Promise<T>;
  /** Whether the host lock is free right now (a racy hint: no other ADD is in its critical step). */
  readonly lockFree: () => Promise<boolean>;
}

export interface DelRequest {
  readonly attachment: AttachmentRef;
  readonly node: string;
  /** K8S_POD_UID when the runtime gave one: an allocation of another pod UID is not released. */
  readonly podUID?: string;
  readonly signal: AbortSignal;
  /**
   * The host lock was held by another process when this DEL asked for it: that holder (a DEL or
   * ADD of this node) has likely just written one of the node's blocks, so the node cache's copy
   * is stale (a 409 and a re-read) and the backend LISTs instead. Default false.
   */
  readonly waited?: boolean;
  /**
   * This DEL holds the host lock (false: it goes on without it after a lock timeout or an
   * unusable lock file), so it may serve the queue. Default false.
   */
  readonly locked?: boolean;
}

/** A DEL's place in the host lock's queue (docs/design-plugin.md §Host lock, "Combining"). */
export interface QueuedDel {
  /** Queues the release (the lock is held by another process: called before the wait). */
  enqueue(): void;
  /**
   * Once it holds the lock (`locked`), or goes on without it: the number of addresses a holder
   * released for it, or undefined when none did (it releases itself). Withdraws the request.
   */
  answer(locked: boolean): Promise<number | undefined>;
  /** Removes the request's files. */
  remove(): void;
}

/** A GC call: core's request in the protocol's terms, and the time budget. */
export interface GcCall {
  readonly network: string;
  readonly node: string;
  /** Attachments that are live; every other allocation of this network on this node goes. */
  readonly validAttachments: readonly Attachment[];
  readonly signal: AbortSignal;
}

/** The IPAM operations; each call is independent (no state kept between calls). */
export interface Backend {
  add(req: AddRequest): Promise<AddOutcome>;
  /** Releases every address of the attachment; nothing to release is success. Returns the count. */
  del(req: DelRequest): Promise<number>;
  /** A DEL's ticket in the host lock's queue; undefined when the netconf turns it off. */
  queueDel?(req: Omit<DelRequest, 'signal' | 'waited' | 'locked'>): QueuedDel | undefined;
  /** Compares the stored allocation of the attachment with `expectedIPs` (from prevResult). */
  check(attachment: AttachmentRef, expectedIPs: readonly string[]): Promise<CheckOutcome>;
  gc(req: GcCall): Promise<GcOutcome>;
  /** Whether an ADD on this node could get an address of every family of `families`. */
  status(node: string, families: readonly IPFamily[], pools: NetConf['pools']): Promise<StatusOutcome>;
  /** Frees connections; idempotent. */
  close(): Promise<void>;
  /** Counters of this invocation (API requests …), logged with the outcome. */
  stats?(): Readonly<Record<string, unknown>>;
}

/**
 * Creates a backend for one invocation's config (lazily: VERSION never calls it).
 * @param command the CNI command it serves (ADD and DEL may be served by the lock's holder:
 *   kube-backend.ts opens no connection ahead for them while the lock is held)
 */
export type BackendFactory = (conf: NetConf, command: CniCommand) => Promise<Backend>;

/** The datastore could not be reached or answered with a server error: the runtime should retry. */
export class BackendUnavailableError extends Error {
  override readonly name = 'BackendUnavailableError';
}

export function isBackendUnavailableError(e: unknown): e is BackendUnavailableError {
  return e instanceof Error && e.name === 'BackendUnavailableError';
}

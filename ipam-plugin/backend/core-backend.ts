/**
 * The {@link Backend} on core's allocator over any core Datastore (Kubernetes in production,
 * memory in unit tests). Per ADD: pod + namespace GETs when the pod is known (annotations,
 * namespace labels, pod UID), the cached snapshot (snapshot-cache.ts), then core's
 * autoAssign / assignIP (warm: 1 LIST + 1 UPDATE). Failures decided on a cached snapshot are
 * retried once on a fresh one. Datastore unavailability maps to BackendUnavailableError
 * (CNI 11); the time budget's signal goes into core's calls (options.signal: once it fires
 * nothing more is sent — no write, retry or rollback) and is raced, so the command ends at once;
 * a write already sent may still land (the runtime's DEL after the failed ADD releases it).
 */
import type { AssignOutcome, PodRef, Datastore, RollbackFailure } from 'blockipam/core';
import {
  autoAssign,
  assignIP,
  findByHandle,
  handleOf,
  releaseByHandle,
  releaseForGC,
  IP_ADDRS_ANNOTATION,
  isRetriesExhausted,
  isUnavailable,
  withSignal,
} from 'blockipam/core';
import { poolStatus, readAnnotations, toAddOutcome, toGcOutcome } from 'blockipam/core/node-ipam';
import type {
  AddOutcome,
  AddRequest,
  AttachmentRef,
  Backend,
  CheckOutcome,
  DelRequest,
  GcOutcome,
  StatusOutcome,
} from './port.ts';
import { BackendUnavailableError } from './port.ts';
import type { GcCall } from './port.ts';
import type { NetConf } from '../cni/netconf.ts';
import { loadInputs, type Inputs, type SnapshotCacheOptions } from '../host/snapshot-cache.ts';
import { isStaleNodeBlocksError, prefetchAffineBlocks } from './prefetch.ts';
import { handoffView, recordNodeBlocks, type NodeBlocksRecord } from './handoff.ts';
import { dropHandoff, handoffFileOf, type HandoffScope } from '../host/handoff-file.ts';
import {
  queueDirOf,
  ticketFor,
  type QueueScope,
  type QueuedAssign,
  type ServedAddresses,
} from '../host/lock-queue.ts';
import { isLockTimeoutError } from '../host/lock.ts';
import { awaitAnswer, serveQueue, type Served } from './combine.ts';
import type { NodeCacheRead } from '../host/node-cache-file.ts';
import {
  blocksHoldHandle,
  cachedBlocksView,
  cacheHoldsHandle,
  inputsFromCache,
  podContextFromCache,
  statusFromCache,
} from './node-cache-use.ts';

export interface CoreBackendOptions {
  readonly ds: Datastore;
  readonly conf: NetConf;
  /** Cache key: what identifies the cluster (apiserver URL + kubeconfig path). */
  readonly cacheKey: string;
  readonly close?: () => Promise<void>;
  /** Transport counters; merged into {@link Backend.stats}. */
  readonly stats?: () => Readonly<Record<string, unknown>>;
  /**
   * Reads the node agent's node cache (host/node-cache-file.ts), at most once per invocation;
   * absent: no node cache. Never throws (a miss is a value).
   */
  readonly nodeCache?: (node: string) => Promise<NodeCacheRead>;
}

/** Rejects with a TimeoutError when `signal` fires first. */
function race<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  p.catch(() => undefined); // core rejects with the same reason once aborted: observed, not unhandled
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Maps core's transient errors to BackendUnavailableError. (A 5xx is already an
 * UnavailableError: the transport's errorFor never makes an ApiError of status ≥ 500.)
 */
async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (isUnavailable(e) || isRetriesExhausted(e))
      throw new BackendUnavailableError((e as Error).message, { cause: e });
    throw e;
  }
}

/** An attachment's handle: core's {@link handleOf}, `<network>.<containerID>.<ifname>`. */
const attachmentHandle = (a: AttachmentRef): string => handleOf(a.network, a.containerID, a.ifname);

type PodContext =
  | {
      pod?: PodRef;
      podNotFound?: boolean;
      namespaceLabels: Record<string, string>;
      pools: string[];
      /** Where `pools` came from (annotations.ts). */
      poolsFrom?: string;
      ips: string[];
    }
  /** `wrongNode`: the pod runs on another node than the plugin's (ipam.nodeName). */
  | { problem: string; wrongNode?: true };

export function createCoreBackend(o: CoreBackendOptions): Backend {
  const { ds, conf } = o;
  let annotationReads = 0;
  let snapshotCached: boolean | undefined;
  let nodeCacheUse: string | undefined;
  let podFromCache: boolean | undefined;
  /** Addresses a failed dual-stack rollback left allocated (logged with the outcome). */
  const rollbackFailed: string[] = [];
  const onRollbackFailure = (f: RollbackFailure): void => {
    rollbackFailed.push(`${f.handle}: ${f.addresses.join(', ')} left allocated: ${f.error.message}`);
  };
  /** A claim on blocks read before the lock was re-decided on a fresh LIST (prefetch.ts). */
  let staleNodeBlocks = false;
  /** Core's first LIST of the node's blocks was the lock hand-off (handoff.ts). */
  let handoffUsed = false;
  /**
   * This ADD queued for the lock and a holder took it: it served it, or answered "not served"
   * and this ADD decided itself (combine.ts).
   */
  let lockQueue: 'served' | 'notServed' | undefined;
  /** As the holder: the queued ADDs it took and served. */
  let queueServed: Served | undefined;
  let read: Promise<NodeCacheRead> | undefined;
  /** The node cache of this invocation (read once), or a miss. */
  const nodeCache = (node: string): Promise<NodeCacheRead> => {
    read ??= o.nodeCache
      ? o.nodeCache(node)
      : Promise.resolve({ ok: false, reason: 'Disabled', message: 'no node cache' } as const);
    return read.then((r) => {
      nodeCacheUse ??= r.ok ? 'used' : r.reason;
      return r;
    });
  };
  const cache = (node: string): SnapshotCacheOptions => ({
    dir: conf.cacheDir,
    key: o.cacheKey,
    ttlMs: conf.snapshotTtlMs,
    node,
  });

  async function podContext(req: AddRequest): Promise<PodContext> {
    if (!req.pod) return { namespaceLabels: {}, pools: [], ips: [] };
    annotationReads += 2;
    const [pod, ns] = await Promise.all([
      ds.getPod(req.pod.namespace, req.pod.name),
      ds.getNamespace(req.pod.namespace),
    ]);
    // The runtime's copy of the pod's annotations (runtimeConfig) wins over the object read.
    const choice = readAnnotations(
      conf.podAnnotations ?? pod?.metadata.annotations,
      ns?.metadata.annotations,
    );
    if ('problem' in choice) return choice;
    // No such pod (e.g. a static pod whose mirror pod does not exist yet): record the allocation
    // with no pod reference (node + handle), which ipamctl treats as owned while the node
    // exists — a pod reference with no pod would read as a leak an operator could release.
    if (!pod)
      return {
        podNotFound: true,
        namespaceLabels: ns?.metadata.labels ?? {},
        pools: [...choice.pools],
        ...(choice.poolsFrom ? { poolsFrom: choice.poolsFrom } : {}),
        ips: [...choice.ips],
      };
    // A pod scheduled on another node than ours (calico #12257): recording this node would let
    // the pod's own node never DEL it and a GC from here free a live pod's address.
    const podNode = pod.spec?.nodeName;
    if (podNode !== undefined && podNode !== '' && podNode !== req.node)
      return {
        wrongNode: true,
        problem: `pod ${req.pod.namespace}/${req.pod.name} runs on node "${podNode}", but this plugin's node name is "${req.node}" (ipam.nodeName, default the host name in lower case): set ipam.nodeName to the name of this host's Node object`,
      };
    // The UID is the runtime's (K8S_POD_UID) or none: the pod object's current UID may be a
    // newer pod of the same name (a recreated StatefulSet pod), not the sandbox's.
    return {
      pod: {
        namespace: req.pod.namespace,
        name: req.pod.name,
        ...(req.pod.uid !== undefined ? { uid: req.pod.uid } : {}),
      },
      namespaceLabels: ns?.metadata.labels ?? {},
      pools: [...choice.pools],
      ...(choice.poolsFrom ? { poolsFrom: choice.poolsFrom } : {}),
      ips: [...choice.ips],
    };
  }

  type Prepared = {
    pc: Exclude<PodContext, { problem: string }>;
    inputs: Inputs;
    /** The first LIST of the node's blocks is served from the node cache. */
    cachedBlocks: boolean;
  };

  /** Core's auto-assign request for `req` (without the snapshot): also what a waiter queues. */
  function autoRequest(req: AddRequest, p: Prepared, inputs: Inputs): QueuedAssign {
    const pools = p.pc.pools.length > 0 ? p.pc.pools : [...req.pools[4], ...req.pools[6]];
    return {
      handle: attachmentHandle(req.attachment),
      network: req.attachment.network,
      node: req.node,
      ...(p.pc.pod ? { pod: p.pc.pod } : {}),
      nodeLabels: inputs.nodeLabels,
      namespaceLabels: p.pc.namespaceLabels,
      ...(pools.length > 0 ? { pools } : {}),
      ipv4: req.families.includes(4),
      ipv6: req.families.includes(6),
    };
  }

  /** Allocates with core; a failure decided on cached inputs is re-decided on fresh ones. */
  async function allocate(
    req: AddRequest,
    p: Prepared,
    view: Datastore,
    fresh: Datastore,
    signal: AbortSignal,
  ): Promise<AddOutcome> {
    const staticIPs = req.staticIPs.length > 0 ? req.staticIPs : p.pc.ips;
    const assign = (inputs: Inputs, on: Datastore): Promise<AssignOutcome> => {
      snapshotCached = inputs.cached;
      // The budget's signal: once it fires core sends nothing more (no write, retry or rollback).
      const options = { onRollbackFailure, signal };
      const { ipv4, ipv6, ...base } = autoRequest(req, p, inputs);
      return staticIPs.length > 0
        ? assignIP(on, { ...base, snapshot: inputs.snapshot, addresses: staticIPs }, options)
        : autoAssign(on, { ...base, snapshot: inputs.snapshot, ipv4, ipv6 }, options);
    };
    // A claim about to rest on node blocks read before the lock that the region LIST (read under
    // the lock) contradicts: nothing was created; decide again on a fresh LIST (prefetch.ts).
    const first = await assign(p.inputs, view).catch((e: unknown) => {
      if (!isStaleNodeBlocksError(e)) throw e;
      staleNodeBlocks = true;
      return assign(p.inputs, fresh);
    });
    // Re-decided on fresh reads: a failure on a cached snapshot; any failure on cached blocks
    // (a handle or address they show taken may have been released since).
    const confirm =
      !first.ok &&
      (p.cachedBlocks || (p.inputs.cached && first.reason !== 'HandleInUse' && first.reason !== 'Taken'));
    const inputs = confirm ? await loadInputs(withSignal(ds, signal), cache(req.node), true) : undefined;
    const out = toAddOutcome(inputs ? await assign(inputs, fresh) : first);
    // A refused pool: say who asked for it (an annotation, else the netconf's pool lists).
    if (out.kind === 'rejected')
      return { ...out, message: `${p.pc.poolsFrom ?? 'ipam.ipv4Pools / ipam.ipv6Pools'}: ${out.message}` };
    if (out.kind === 'addressRefused' && req.staticIPs.length === 0 && p.pc.ips.length > 0)
      return { ...out, message: `pod annotation ${IP_ADDRS_ANNOTATION}: ${out.message}` };
    return out.kind === 'allocated' && p.pc.podNotFound ? { ...out, podNotFound: true } : out;
  }

  /** Pod context and inputs: from a valid node cache where it holds them, else read. */
  async function prepare(
    req: AddRequest,
    nc: NodeCacheRead,
  ): Promise<Prepared | { problem: string; wrongNode?: true }> {
    const fromCache =
      nc.ok && req.pod ? podContextFromCache(nc.cache, req.pod, req.node, conf.podAnnotations) : undefined;
    if (req.pod) podFromCache = fromCache !== undefined;
    const [pc, inputs] = await Promise.all([
      fromCache ?? podContext(req),
      nc.ok ? inputsFromCache(nc.cache) : loadInputs(ds, cache(req.node)),
    ]);
    return 'problem' in pc ? pc : { pc, inputs, cachedBlocks: nc.ok };
  }

  /**
   * Reads (pod, namespace, snapshot) happen before the lock. When the lock looks free, the
   * affine-block LIST starts with them and is used under the lock if it was obtained without
   * waiting (no other ADD ran its critical step meanwhile, most likely): one round trip under
   * the lock. Otherwise core LISTs under the lock: LIST + UPDATE. The lock is never held across
   * a TLS handshake or the annotation reads, so hand-over stays fast under a burst.
   */
  async function add(req: AddRequest): Promise<AddOutcome> {
    const nc = await nodeCache(req.node);
    const view = nc.ok
      ? cachedBlocksView(ds, nc.cache, req.node)
      : req.staticIPs.length === 0 && (await req.lockFree())
        ? prefetchAffineBlocks(ds, req.node)
        : undefined;
    const p = await prepare(req, nc);
    if ('problem' in p) return { kind: p.wrongNode ? 'misconfigured' : 'rejected', message: p.problem };
    // An auto-assign ADD that must wait queues its request: the holder may serve it (combine.ts).
    const ticket =
      conf.lockQueue && req.staticIPs.length === 0 && p.pc.ips.length === 0
        ? ticketFor(
            queueScopeOf(req.node),
            { kind: 'add', request: autoRequest(req, p, p.inputs) },
            Date.now() + conf.lockTimeoutMs,
          )
        : undefined;
    const servedOutcome = (s: ServedAddresses): AddOutcome => {
      lockQueue = 'served';
      const out = toAddOutcome({ ok: true, ...s });
      return out.kind === 'allocated' && p.pc.podNotFound ? { ...out, podNotFound: true } : out;
    };
    // After a wait for the lock another holder of this node has just written, and handed off
    // the node's blocks as it released (a burst): they are the newest view. Without a hand-off,
    // its block is newer than the cache or the prefetched LIST (a conflict and a re-read), so
    // core LISTs afresh.
    const step = async (signal: AbortSignal, waited: boolean): Promise<AddOutcome> => {
      if (ticket?.queued) {
        // Under the lock no holder is serving: a request still queued was taken by nobody.
        const served = ticket.answer()?.served;
        if (served) return servedOutcome(served);
        if (ticket.withdraw() === 'taken') lockQueue = 'notServed';
      }
      return underRecord(req.node, async (rec) => {
        const handed = waited ? handoffView(ds, scopeOf(req.node)) : undefined;
        if (handed) handoffUsed = true;
        const base = handed ?? (view && !waited ? view : ds);
        const cachedBlocks = (p.cachedBlocks && !waited) || handed !== undefined;
        const out = await race(
          guard(allocate(req, { ...p, cachedBlocks }, rec.over(base), rec.over(ds), signal)),
          signal,
        );
        const nodeBlocks = out.kind === 'allocated' && conf.lockQueue ? rec.blocks() : undefined;
        if (nodeBlocks) {
          const s = await serveQueue({
            base: rec.over(ds),
            scope: queueScopeOf(req.node),
            nodeBlocks,
            snapshot: p.inputs.snapshot,
            signal,
          });
          if (s.taken > 0) queueServed = s;
        }
        return out;
      });
    };
    try {
      return await req.critical(step, ticket ? () => ticket.enqueue() : undefined);
    } catch (e) {
      // The wait timed out, but a holder took the request: its answer comes within its budget.
      if (ticket && isLockTimeoutError(e) && ticket.withdraw() === 'taken') {
        const served = (await awaitAnswer(ticket, conf.timeoutMs))?.served;
        if (served) return servedOutcome(served);
      }
      throw e;
    } finally {
      ticket?.remove();
    }
  }

  /** The node's lock queue (host/lock-queue.ts): next to the lock file, per cluster. */
  const queueScopeOf = (node: string): QueueScope => ({
    dir: queueDirOf(conf.lockFile),
    cluster: o.cacheKey,
    node,
  });

  /** The node's lock hand-off (host/handoff-file.ts): next to the lock file, per cluster. */
  const scopeOf = (node: string): HandoffScope => ({
    file: handoffFileOf(conf.lockFile),
    cluster: o.cacheKey,
    node,
  });

  /** Runs `step` (under the lock) recording the node's blocks, handed off however it ends. */
  async function underRecord<T>(node: string, step: (rec: NodeBlocksRecord) => Promise<T>): Promise<T> {
    const rec = recordNodeBlocks(scopeOf(node));
    let out: T;
    try {
      out = await step(rec);
    } catch (e) {
      // A call that failed on a hand-off must not leave one for the next holder (if the hand-off
      // itself was the cause, every waiter would fail on it for its 5 s).
      if (handoffUsed) dropHandoff(scopeOf(node));
      else rec.handOff();
      throw e;
    }
    rec.handOff();
    return out;
  }

  return {
    add: (req) => guard(add(req)),
    async del(req: DelRequest) {
      const handle = attachmentHandle(req.attachment);
      // The cached blocks serve the LIST only when they hold the handle in every family this
      // network assigns; otherwise the allocation may be newer than the cache: LIST. After a
      // wait for the lock another holder of this node has written (a mass DEL: every DEL but
      // the first), so its block is newer than the cache: LIST + UPDATE, not UPDATE 409 + GET
      // + UPDATE (the ADD rule, add() above).
      const nc = await nodeCache(req.node);
      const holds = nc.ok && cacheHoldsHandle(nc.cache, handle, conf.families);
      if (nc.ok && !holds) nodeCacheUse = 'HandleNotCached';
      else if (nc.ok && req.waited) nodeCacheUse = 'LockWaited';
      const r = await underRecord(req.node, async (rec) => {
        // The hand-off of the holder before (a mass DEL) holds the newest blocks of the node; it
        // serves only when it holds the handle in every family (the node cache's rule).
        const handed = req.waited
          ? handoffView(ds, scopeOf(req.node), (blocks) => blocksHoldHandle(blocks, handle, conf.families))
          : undefined;
        if (handed) handoffUsed = true;
        const view = handed ?? (holds && !req.waited ? cachedBlocksView(ds, nc.cache, req.node) : ds);
        const out = await race(
          guard(
            releaseByHandle(
              rec.over(view),
              handle,
              { node: req.node, ...(req.podUID !== undefined ? { podUID: req.podUID } : {}) },
              { signal: req.signal },
            ),
          ),
          req.signal,
        );
        // Holding the lock, it releases the DELs queued behind it too (no snapshot: no ADDs).
        const nodeBlocks = conf.lockQueue && req.locked ? rec.blocks() : undefined;
        if (nodeBlocks) {
          const s = await serveQueue({
            base: rec.over(ds),
            scope: queueScopeOf(req.node),
            nodeBlocks,
            signal: req.signal,
          });
          if (s.taken > 0) queueServed = s;
        }
        return out;
      });
      return r.released.length;
    },
    queueDel(req) {
      if (!conf.lockQueue) return undefined;
      const ticket = ticketFor(
        queueScopeOf(req.node),
        {
          kind: 'del',
          release: {
            handle: attachmentHandle(req.attachment),
            node: req.node,
            ...(req.podUID !== undefined ? { podUID: req.podUID } : {}),
          },
        },
        Date.now() + conf.lockTimeoutMs,
      );
      return {
        enqueue: () => ticket.enqueue(),
        async answer(locked) {
          if (!ticket.queued) return undefined;
          const now = ticket.answer();
          const taken = now === undefined && ticket.withdraw() === 'taken';
          // Without the lock a holder may be serving it right now: its answer comes before it
          // releases. Under the lock a taken request without an answer lost its holder.
          const a = now ?? (taken && !locked ? await awaitAnswer(ticket, conf.timeoutMs) : undefined);
          if (a?.released !== undefined) lockQueue = 'served';
          else if (a !== undefined || taken) lockQueue = 'notServed';
          return a?.released;
        },
        remove: () => ticket.remove(),
      };
    },
    async check(a: AttachmentRef, expected: readonly string[]): Promise<CheckOutcome> {
      const found = await guard(findByHandle(ds, attachmentHandle(a), { node: conf.nodeName }));
      if (found.length === 0)
        return { kind: 'missing', message: `no address is allocated to ${attachmentHandle(a)}` };
      const have = new Set(found.map((f) => f.address));
      const stray = expected.filter((ip) => !have.has(ip));
      if (stray.length > 0)
        return {
          kind: 'mismatch',
          message: `prevResult names ${stray.join(', ')}, allocated: ${[...have].join(', ')}`,
        };
      return { kind: 'ok' };
    },
    async gc(req: GcCall): Promise<GcOutcome> {
      // GC writes blocks without following the node's list: the next holder must not trust the
      // hand-off written before it (a conflict per block otherwise).
      dropHandoff(scopeOf(req.node));
      const r = await race(
        guard(
          releaseForGC(
            ds,
            { node: req.node, network: req.network, validAttachments: req.validAttachments },
            { signal: req.signal },
          ),
        ),
        req.signal,
      );
      return toGcOutcome(r);
    },
    async status(node, families, confPools): Promise<StatusOutcome> {
      const nc = await nodeCache(node);
      if (nc.ok && statusFromCache(nc.cache, node, families, [...confPools[4], ...confPools[6]]))
        return { kind: 'ready' };
      if (nc.ok) nodeCacheUse = 'StatusNotProven';
      const inputs = await guard(loadInputs(ds, cache(node)));
      return guard(
        poolStatus(ds, {
          node,
          families,
          pools: [...confPools[4], ...confPools[6]],
          snapshot: inputs.snapshot,
          nodeLabels: inputs.nodeLabels,
        }),
      );
    },
    close: () => o.close?.() ?? Promise.resolve(),
    stats: () => ({
      ...o.stats?.(),
      annotationReads,
      ...(snapshotCached !== undefined ? { snapshotCached } : {}),
      ...(nodeCacheUse !== undefined ? { nodeCache: nodeCacheUse } : {}),
      ...(podFromCache !== undefined ? { podFromCache } : {}),
      ...(staleNodeBlocks ? { staleNodeBlocks } : {}),
      ...(handoffUsed ? { handoff: true } : {}),
      ...(lockQueue ? { lockQueue } : {}),
      ...(queueServed
        ? {
            queueTaken: queueServed.taken,
            queueServed: queueServed.served,
            queueFlushFailed: queueServed.flushFailed,
          }
        : {}),
      ...(rollbackFailed.length > 0 ? { rollbackFailed } : {}),
    }),
  };
}

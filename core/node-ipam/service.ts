/**
 * The node IPAM service (docs/design-core.md §Node IPAM service): ADD, DEL, CHECK, GC and STATUS
 * of one node with the CNI plugin's semantics, on core's allocator. The node agent serves it over
 * its socket, the plugin's direct path calls it in-process: each rule once, here.
 *
 * Every operation takes the caller's signal: it goes into core's calls (once it fires nothing more
 * is sent — no read, write, retry or rollback) and the operation rejects with `signal.reason` at
 * once; a write already sent may still land (the runtime's DEL after the failed ADD releases it).
 * Over core's batching datastore (the agent's) a change still queued for a batch when the signal
 * fires is dropped, never sent; one already in an UPDATE sent may land.
 * Expected outcomes are values; failures are thrown as core's errors and mapped by errorKindOf.
 */
import { bitsOf, parseIP } from '../address/ip.ts';
import { autoAssign } from '../allocator/auto-assign.ts';
import type { AllocatorOptions } from '../allocator/context.ts';
import { releaseForGC } from '../allocator/gc.ts';
import { findByHandle, releaseByHandle } from '../allocator/release.ts';
import { assignIP } from '../allocator/static-assign.ts';
import { handleOf } from '../allocator/types.ts';
import type { PoolSnapshot } from '../allocator/pools.ts';
import type { AllocatedAddress, AssignRequestBase, ReleaseResult } from '../allocator/types.ts';
import { IP_ADDRS_ANNOTATION } from '../annotations.ts';
import type { Datastore } from '../datastore/datastore.ts';
import { abortable, withSignal } from '../datastore/with-signal.ts';
import type { NodeInputs } from './inputs.ts';
import { toAddOutcome, toGcOutcome } from './outcomes.ts';
import { podContextOf, type PodContext } from './pod-context.ts';
import type {
  AddCall,
  AddOutcome,
  AttachmentRef,
  CheckCall,
  CheckOutcome,
  DelCall,
  DelOutcome,
  StatusCall,
  StatusOutcome,
} from './service-types.ts';
import { poolStatus } from './status.ts';
import type { NodeIpam } from './types.ts';

export interface NodeIpamOptions {
  /** Where the blocks are read and written (compare-and-swap); also what GC reads pods from. */
  readonly ds: Datastore;
  /**
   * A datastore whose LIST of the node's blocks reaches the API server, given when `ds` answers
   * that LIST from a watch (the agent's view), which may not have seen another writer's
   * allocation yet; its writes should go where `ds`'s go (the agent's: the same batches).
   * Default: none (`ds` is read at the API server already, and alone answers).
   *
   * A DEL answers from `ds` alone only when `ds` accounts for every allocation of the handle, by
   * what {@link NodeIpamOptions.written} says this process's writes did to it: they allocated the handle and
   * `ds` found each of those addresses (released, or refused for another pod UID); or they
   * released the handle lately and `ds` finds nothing of it — kubelet's second DEL of every pod
   * costs no LIST. Otherwise —
   * a handle another writer allocated (the plugin's direct path, or before this service
   * started: `ds` may hold part of it or nothing), or one `ds` holds less of than this service
   * allocated — the DEL releases through `authority` (1 LIST + the UPDATEs). A CHECK looks
   * again through `authority` when `ds` finds nothing for the handle or not every expected
   * address.
   */
  readonly authority?: Datastore;
  /**
   * With `authority`: what this process's own writes through `ds` did to a handle — the bare
   * addresses they allocated to it, `[]` when they released them lately, undefined when they did
   * neither (the agent's view records it from the blocks it writes). Default: nothing known, so
   * every DEL releases through `authority`.
   */
  readonly written?: (handle: string) => readonly string[] | undefined;
  /** Snapshot, node labels, pod and namespace (inputs.ts; `datastoreInputs(ds)` reads each time). */
  readonly inputs: NodeInputs;
  /**
   * Core's allocator options for every operation (clock, random, sleep, maxRetries,
   * onRollbackFailure — told when a dual-stack rollback left addresses allocated; the caller
   * logs it). The signal is each call's own. Default: core's defaults.
   */
  readonly allocator?: Omit<AllocatorOptions, 'signal' | 'stats'>;
}

/**
 * Runs `op` unless `signal` has fired (then it starts nothing), and rejects with the signal's
 * reason as soon as it fires — `op` itself stops at its next call (core binds the signal).
 */
function bounded<T>(signal: AbortSignal, op: () => Promise<T>): Promise<T> {
  return signal.aborted ? Promise.reject(signal.reason as Error) : abortable(op(), signal);
}

/** An attachment's handle: `<network>.<containerID>.<ifname>`. */
const handleOfAttachment = (a: AttachmentRef): string => handleOf(a.network, a.containerID, a.ifname);

/**
 * Says who asked for what an ADD was refused: a refused requested pool names where the pool list
 * came from (an annotation, else the netconf's pool lists); a refused static address names the pod
 * annotation, or `call.staticIPsFrom` when the call gave it (no prefix when it did not).
 */
function decorate(out: AddOutcome, call: AddCall, pc: PodContext, requested: boolean): AddOutcome {
  if (out.kind === 'rejected' && requested)
    return { ...out, message: `${pc.poolsFrom ?? 'ipam.ipv4Pools / ipam.ipv6Pools'}: ${out.message}` };
  if (out.kind === 'addressRefused' && call.staticIPs.length > 0 && call.staticIPsFrom !== undefined)
    return { ...out, message: `${call.staticIPsFrom}: ${out.message}` };
  if (out.kind === 'addressRefused' && call.staticIPs.length === 0 && pc.ips.length > 0)
    return { ...out, message: `pod annotation ${IP_ADDRS_ANNOTATION}: ${out.message}` };
  return out.kind === 'allocated' && pc.podNotFound ? { ...out, podNotFound: true } : out;
}

/** Both releases' results, each address once (the second ran after the first had written). */
function merged(a: ReleaseResult, b: ReleaseResult): ReleaseResult {
  const seen = new Set(a.released.map((x) => x.address));
  return {
    released: [...a.released, ...b.released.filter((x) => !seen.has(x.address))],
    refused: b.refused,
  };
}

/**
 * Creates the service. Per ADD: pod + namespace from the inputs when the call names a pod, the
 * snapshot and node labels from the inputs (passed into core's request: core reads neither
 * again), then core's assignIP (static: `call.staticIPs`, else the pod annotation's) or
 * autoAssign — warm: 1 LIST of the node's blocks + 1 UPDATE. DEL: core's releaseByHandle over the
 * node's blocks with the pod UID precondition. CHECK: findByHandle. With `authority`, a DEL or
 * CHECK that `ds` may answer only in part goes to it (1 more LIST; the rule: see
 * NodeIpamOptions.authority). GC: releaseForGC. STATUS: poolStatus on the inputs' snapshot and
 * labels.
 */
export function createNodeIpam(options: NodeIpamOptions): NodeIpam {
  const { ds, inputs, authority } = options;
  const core = (signal: AbortSignal): AllocatorOptions => ({ ...options.allocator, signal });

  async function add(call: AddCall, signal: AbortSignal): Promise<AddOutcome> {
    const [pc, snapshot, nodeLabels] = await Promise.all([
      podContextOf(call, inputs, signal),
      inputs.snapshot(signal),
      inputs.nodeLabels(call.node, signal),
    ]);
    if ('problem' in pc) return { kind: pc.wrongNode ? 'misconfigured' : 'rejected', message: pc.problem };
    const pools = pc.pools.length > 0 ? pc.pools : [...call.pools[4], ...call.pools[6]];
    const base: AssignRequestBase = {
      handle: handleOfAttachment(call.attachment),
      network: call.attachment.network,
      node: call.node,
      ...(pc.pod ? { pod: pc.pod } : {}),
      nodeLabels,
      namespaceLabels: pc.namespaceLabels,
      ...(pools.length > 0 ? { pools } : {}),
      snapshot,
    };
    const staticIPs = call.staticIPs.length > 0 ? call.staticIPs : pc.ips;
    const assigned =
      staticIPs.length > 0
        ? await assignIP(ds, { ...base, addresses: staticIPs }, core(signal))
        : await autoAssign(
            ds,
            {
              ...base,
              snapshot: excluding(snapshot, call.excludedIPs ?? []),
              ipv4: call.families.includes(4),
              ipv6: call.families.includes(6),
            },
            core(signal),
          );
    return decorate(toAddOutcome(assigned), call, pc, pools.length > 0);
  }

  async function del(call: DelCall, signal: AbortSignal): Promise<DelOutcome> {
    const handle = handleOfAttachment(call.attachment);
    const query = { node: call.node, ...(call.podUID !== undefined ? { podUID: call.podUID } : {}) };
    const release = (store: Datastore): Promise<ReleaseResult> =>
      releaseByHandle(store, handle, query, core(signal));
    const mine = options.written?.(handle);
    let r: ReleaseResult;
    if (!authority) r = await release(ds);
    else if (!mine)
      r = await release(authority); // another writer's: ds may hold part
    else {
      // NodeIpamOptions.authority: ds answers when it accounts for every allocation of the handle
      r = await release(ds);
      const found = [...r.released, ...r.refused].map((a) => a.address);
      const whole = mine.length > 0 ? mine.every((a) => found.includes(a)) : found.length === 0;
      if (!whole) r = merged(r, await release(authority));
    }
    return { released: r.released.length };
  }

  async function check(call: CheckCall, signal: AbortSignal): Promise<CheckOutcome> {
    const handle = handleOfAttachment(call.attachment);
    let found = await findByHandle(withSignal(ds, signal), handle, { node: call.node });
    const lacks = (f: readonly AllocatedAddress[]): boolean =>
      f.length === 0 || call.expectedIPs.some((ip) => !f.some((a) => a.address === ip));
    if (authority && lacks(found))
      found = await findByHandle(withSignal(authority, signal), handle, { node: call.node });
    if (found.length === 0)
      return { kind: 'missing', message: `no address is allocated to ${handle} on node ${call.node}` };
    const have = new Set(found.map((f) => f.address));
    const stray = call.expectedIPs.filter((ip) => !have.has(ip));
    if (stray.length > 0)
      return {
        kind: 'mismatch',
        message: `prevResult names ${stray.join(', ')}, allocated: ${[...have].join(', ')}`,
      };
    return { kind: 'ok' };
  }

  async function status(call: StatusCall, signal: AbortSignal): Promise<StatusOutcome> {
    const [snapshot, nodeLabels] = await Promise.all([
      inputs.snapshot(signal),
      inputs.nodeLabels(call.node, signal),
    ]);
    return poolStatus(withSignal(ds, signal), {
      node: call.node,
      families: call.families,
      pools: [...call.pools[4], ...call.pools[6]],
      snapshot,
      nodeLabels,
    });
  }

  return {
    add: (call, signal) => bounded(signal, () => add(call, signal)),
    del: (call, signal) => bounded(signal, () => del(call, signal)),
    check: (call, signal) => bounded(signal, () => check(call, signal)),
    gc: (call, signal) =>
      bounded(signal, () =>
        releaseForGC(
          ds,
          { node: call.node, network: call.network, validAttachments: call.validAttachments },
          core(signal),
        ).then(toGcOutcome),
      ),
    status: (call, signal) => bounded(signal, () => status(call, signal)),
  };
}

/** `snapshot` with each of `addresses` reserved as a host prefix (never auto-assigned). */
function excluding(snapshot: PoolSnapshot, addresses: readonly string[]): PoolSnapshot {
  const hosts = addresses.flatMap((address) => {
    const ip = parseIP(address);
    return ip ? [{ family: ip.family, base: ip.value, prefixLength: bitsOf(ip.family) }] : [];
  });
  return hosts.length === 0 ? snapshot : { ...snapshot, reservations: [...snapshot.reservations, ...hosts] };
}

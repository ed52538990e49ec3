/**
 * The direct path (docs/design-plugin.md §Thin client): the node IPAM in this process, core's
 * allocator over the API server ({@link Backend}, kube-backend.ts), used when the node agent's
 * socket accepts no connection and in `ipam.mode: standalone`. The host lock is this path's
 * alone: ADD runs its allocation step under it, DEL and GC their whole step (the budget,
 * `conf.timeoutMs`, starts once it is held: docs/design-plugin.md §Host lock); CHECK and STATUS
 * are reads and take none. Loaded lazily by dispatch.ts, so a call the agent serves never
 * evaluates core, the Kubernetes transport or the lock module.
 *
 * Its failures are mapped to CNI errors here ({@link directFailure}): the agent path never meets
 * core's error classes.
 */
import type {
  AddCall,
  AddOutcome,
  CheckCall,
  DelCall,
  GcCall,
  StatusCall,
} from 'blockipam/core/node-ipam/protocol';
import type { Backend, BackendFactory } from './port.ts';
import { isBackendUnavailableError } from './port.ts';
import type { IpamClient } from './client.ts';
import { isKubeconfigError } from 'blockipam/core/kube';
import {
  acquireHostLock,
  isHostLockFree,
  isLockFileError,
  isLockTimeoutError,
  type HostLock,
} from '../host/lock.ts';
import type { Logger } from '../host/log.ts';
import type { NetConf } from '../cni/netconf.ts';
import type { CniCommand } from '../cni/env.ts';
import { CniCode, CniError } from '../cni/errors.ts';
import { apiFailure } from './api-failure.ts';

export interface DirectOptions {
  readonly conf: NetConf;
  readonly command: CniCommand;
  readonly log: Logger;
  /** Creates the backend, on first use (once per invocation). */
  readonly backend: BackendFactory;
  /**
   * Takes the host lock on `conf.lockFile`, waiting at most `conf.lockTimeoutMs`; `beforeWait`
   * runs once when another process holds it. Default: the flock(2) lock {@link acquireHostLock}
   * (Bun only; in-process tests under Node inject one).
   */
  readonly lock?: (beforeWait?: () => void) => Promise<HostLock>;
  /** Whether the host lock is free right now (a racy hint). Default: {@link isHostLockFree}. */
  readonly lockFree?: () => Promise<boolean>;
}

/** The direct path's {@link IpamClient} for one invocation. */
export function createDirectClient(o: DirectOptions): IpamClient {
  const { conf } = o;
  let backend: Backend | undefined;
  const get = async (): Promise<Backend> => (backend ??= await o.backend(conf, o.command));
  const lock = (beforeWait?: () => void): Promise<HostLock> =>
    o.lock
      ? o.lock(beforeWait)
      : acquireHostLock(conf.lockFile, conf.lockTimeoutMs, conf.lockHolderNice, beforeWait);
  const lockFree = (): Promise<boolean> => (o.lockFree ?? (() => isHostLockFree(conf.lockFile)))();
  const locking = { conf, log: o.log, lock };

  async function add(call: AddCall): Promise<AddOutcome> {
    const b = await get();
    const outcome = await b.add({
      attachment: call.attachment,
      ...(call.pod ? { pod: call.pod } : {}),
      node: call.node,
      families: call.families,
      pools: call.pools,
      staticIPs: call.staticIPs,
      critical: (step, beforeWait) => underLock(locking, step, beforeWait ? { beforeWait } : {}),
      lockFree,
    });
    // A refused static address: say which field asked for it (the pod annotation: core-backend.ts).
    return outcome.kind === 'addressRefused' && call.staticIPs.length > 0
      ? { ...outcome, message: `${call.staticIPsFrom ?? 'CNI_ARGS IP'}: ${outcome.message}` }
      : outcome;
  }

  async function del(call: DelCall): Promise<{ released: number }> {
    const b = await get();
    // Queued behind a holder, the holder may release it (docs/design-plugin.md §Host lock, "Combining").
    const queued = b.queueDel?.(call);
    try {
      const released = await underLock(
        locking,
        async (signal, waited, locked) =>
          (await queued?.answer(locked)) ?? b.del({ ...call, signal, waited, locked }),
        { withoutLock: true, ...(queued ? { beforeWait: () => queued.enqueue() } : {}) },
      );
      return { released };
    } finally {
      queued?.remove();
    }
  }

  const mapped =
    <C, R>(op: CniCommand, f: (call: C) => Promise<R>) =>
    async (call: C): Promise<R> => {
      try {
        return await f(call);
      } catch (e) {
        throw directFailure(op, e);
      }
    };

  return {
    path: 'direct',
    add: mapped('ADD', add),
    del: mapped('DEL', del),
    check: mapped('CHECK', async (call: CheckCall) => (await get()).check(call.attachment, call.expectedIPs)),
    gc: mapped('GC', async (call: GcCall) => {
      const b = await get();
      return underLock(locking, (signal) =>
        b.gc({
          network: call.network,
          node: call.node,
          validAttachments: call.validAttachments.map((a) => ({ ...a })),
          signal,
        }),
      );
    }),
    status: mapped('STATUS', async (call: StatusCall) =>
      (await get()).status(call.node, call.families, call.pools),
    ),
    close: async () => {
      await backend?.close();
    },
    stats: () => ({ ...backend?.stats?.() }),
  };
}

/**
 * A direct-path failure as a CNI error: the datastore unreachable is 11 (STATUS: 50, an ADD
 * cannot be served), as is a kubeconfig file not readable at request time (the user's tokenFile:
 * the node agent may write it after the runtime starts calling), a busy host lock, and the time
 * budget; an unusable lock file is 5; credentials and rejected requests 105 / 106
 * ({@link apiFailure}); a CniError keeps its code. Anything else is left to dispatch.ts.
 */
export function directFailure(op: CniCommand, e: unknown): unknown {
  if (e instanceof CniError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  if (isBackendUnavailableError(e))
    return new CniError(
      op === 'STATUS' ? CniCode.notAvailable : CniCode.tryAgainLater,
      'datastore unreachable',
      msg,
    );
  if (isKubeconfigError(e)) return new CniError(CniCode.tryAgainLater, 'kubeconfig unavailable', msg);
  if (isLockTimeoutError(e)) return new CniError(CniCode.tryAgainLater, 'host lock busy', msg);
  if (isLockFileError(e))
    return new CniError(CniCode.ioFailure, 'host lock file unusable (ipam.lockFile)', msg);
  return apiFailure(e) ?? e;
}

interface Locking {
  readonly conf: NetConf;
  readonly log: Logger;
  lock(beforeWait?: () => void): Promise<HostLock>;
}

/**
 * Runs `step` holding the host lock, with an AbortSignal that fires `conf.timeoutMs` after the
 * lock was obtained, whether it had to wait for another holder, and whether it holds the lock
 * (false only with `withoutLock`). Released on every path.
 * @param options.beforeWait runs once when another process holds the lock, before waiting (an
 *   ADD or DEL queues its request for the holder: docs/design-plugin.md §Host lock, "Combining")
 * @param options.withoutLock run `step` unlocked (as after a wait: no cached block is trusted)
 *   when the lock file cannot be used, or when the lock was not obtained within
 *   `conf.lockTimeoutMs`, instead of failing (DEL: docs/design-plugin.md invariant 5 — the lock
 *   only saves conflicts, compare-and-swap keeps every write correct)
 * @throws whatever `step` throws; LockTimeoutError when the lock is not obtained in time and
 *   LockFileError when the lock file is unusable (unless `withoutLock`)
 */
export async function underLock<T>(
  ctx: Locking,
  step: (signal: AbortSignal, waited: boolean, locked: boolean) => Promise<T>,
  options: { withoutLock?: boolean; beforeWait?: () => void } = {},
): Promise<T> {
  const waitStart = performance.now();
  const waitCpu = process.cpuUsage();
  let lock: HostLock;
  let locked = true;
  try {
    lock = await ctx.lock(options.beforeWait);
  } catch (e) {
    // DEL must not fail on a host problem it does not need solved: the lock only saves
    // conflicts (compare-and-swap keeps every write correct), so it goes on without it.
    if (!options.withoutLock || !(isLockFileError(e) || isLockTimeoutError(e))) throw e;
    ctx.log.log(
      'warn',
      isLockFileError(e)
        ? 'host lock file unusable: going on without the lock'
        : 'host lock busy: going on without the lock',
      { error: (e as Error).message },
    );
    lock = { waited: true, release: () => Promise.resolve() };
    locked = false;
  }
  const heldAt = performance.now();
  const heldCpu = process.cpuUsage();
  try {
    return await step(AbortSignal.timeout(ctx.conf.timeoutMs), lock.waited ?? false, locked);
  } finally {
    await lock.release();
    // On every later line (the `done` line): how long this call waited for and held the lock,
    // ms, and the CPU it used meanwhile (user + system, ms).
    ctx.log.bind({
      lockWaitMs: Math.round(heldAt - waitStart),
      lockHeldMs: Math.round(performance.now() - heldAt),
      cpuLockWaitMs: cpuDeltaMs(waitCpu, heldCpu),
      cpuLockHeldMs: cpuDeltaMs(heldCpu, process.cpuUsage()),
    });
  }
}

/** CPU used between two {@link process.cpuUsage} readings (user + system), ms with one decimal. */
const cpuDeltaMs = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage): number =>
  Math.round((b.user - a.user + b.system - a.system) / 100) / 10;

/**
 * The direct path (docs/design-plugin.md §Direct path): core's node IPAM service in this process
 * over the API server ({@link Backend}, kube-backend.ts), used when the node agent's socket
 * accepts no connection and in `ipam.mode: standalone`. ADD, DEL and GC run under the host lock
 * (best effort: host/lock.ts), with a budget of `conf.timeoutMs` that starts once it is held;
 * CHECK and STATUS are reads and take none (their budget starts at once). Loaded lazily by
 * direct.ts, so a call the agent serves never evaluates core, the Kubernetes transport or the
 * lock module.
 *
 * Its failures are mapped to CNI errors here ({@link directFailure}): the agent path never meets
 * core's error classes. A DEL that fails for want of a credential or the API server is queued
 * for the agent and answered success; an ADD whose credential is refused says since when the
 * agent (which refreshes it) has been away (queueing.ts). A call naming another node than its
 * credential's is refused before any write ({@link ownNode}).
 */
import { isKubeconfigError } from 'blockipam/core/kube';
import { isRetriesExhausted, isUnavailable } from 'blockipam/core';
import { credentialNodeProblem } from 'blockipam/core/node-ipam';
import type { Backend, BackendFactory } from './port.ts';
import type { CniCommand, IpamClient, Logger, NetConf } from 'blockipam/core/cni';
import { acquireHostLock, isLockFileError, isLockTimeoutError, type HostLock } from '../host/lock.ts';
import { CniCode, CniError } from 'blockipam/core/cni/errors';
import { apiFailure } from './api-failure.ts';
import { explainingRefusal, queueing } from './queueing.ts';

export interface DirectOptions {
  readonly conf: NetConf;
  readonly log: Logger;
  /** Creates the backend, on first use (once per invocation). */
  readonly backend: BackendFactory;
  /**
   * Takes the host lock on `conf.lockFile`, trying for at most `conf.lockTimeoutMs`; `onWait`
   * runs once when another process holds it. Default: {@link acquireHostLock} (Bun only;
   * in-process tests under Node inject one).
   */
  readonly lock?: (onWait: () => void) => Promise<HostLock>;
}

/** The direct path's {@link IpamClient} for one invocation. */
export function createDirectClient(o: DirectOptions): IpamClient {
  const { conf, log } = o;
  let backend: Backend | undefined;
  const get = async (): Promise<Backend> => (backend ??= await o.backend(conf));
  const locking: Locking = {
    conf,
    log,
    lock: o.lock ?? ((onWait) => acquireHostLock(conf.lockFile, conf.lockTimeoutMs, onWait)),
  };
  /** The budget of a call that takes no lock. */
  const budget = (): AbortSignal => AbortSignal.timeout(conf.timeoutMs);
  const mapped =
    <C extends { readonly node: string }, R>(op: CniCommand, f: (call: C, b: Backend) => Promise<R>) =>
    async (call: C): Promise<R> => {
      try {
        // The backend first (kubeconfig, connection opened ahead): its TLS handshake overlaps the wait.
        const b = await get();
        return await f(ownNode(op, call, b, log), b);
      } catch (e) {
        throw directFailure(op, e);
      }
    };
  return {
    path: 'direct',
    add: explainingRefusal(
      conf,
      mapped('ADD', (call, b) => underLock(locking, (signal) => b.ipam.add(call, signal))),
    ),
    // A DEL never fails on the lock: it goes on without it (compare-and-swap keeps that correct);
    // nor for want of a credential or the API server: it is queued for the agent (queueing.ts).
    del: queueing(
      conf,
      log,
      mapped('DEL', (call, b) => underLock(locking, (signal) => b.ipam.del(call, signal), true)),
    ),
    gc: mapped('GC', (call, b) => underLock(locking, (signal) => b.ipam.gc(call, signal))),
    check: mapped('CHECK', (call, b) => b.ipam.check(call, budget())),
    status: mapped('STATUS', (call, b) => b.ipam.status(call, budget())),
    close: async () => {
      await backend?.close();
    },
    stats: () => ({ ...backend?.stats?.() }),
  };
}

/**
 * The call as the direct path may serve it with `b`'s credential (core's credentialNodeProblem,
 * before any write): one naming another node than the Node the credential belongs to is CNI 7
 * "node name mismatch" with the message the agent gives for the same mistake — except DEL, served
 * for the credential's node, as the agent serves it for its own (the attachment ran on this host;
 * the CNI spec asks DEL to complete whenever it can), with a `warn` line.
 * @throws CniError 7 on a mismatch (not DEL)
 */
function ownNode<C extends { readonly node: string }>(
  op: CniCommand,
  call: C,
  b: Pick<Backend, 'credentialNode'>,
  log: Logger,
): C {
  const problem = credentialNodeProblem(call.node, b.credentialNode);
  if (problem === undefined || b.credentialNode === undefined) return call;
  if (op !== 'DEL') throw new CniError(CniCode.invalidConfig, 'node name mismatch', problem);
  log.log('warn', "DEL naming another node served for the credential's node", {
    callNode: call.node,
    credentialNode: b.credentialNode,
  });
  return { ...call, node: b.credentialNode };
}

/**
 * A direct-path failure as a CNI error: the datastore unreachable (or compare-and-swap that kept
 * losing) is 11 (STATUS: 50, an ADD cannot be served), as is a kubeconfig file not readable at
 * request time (the user's tokenFile: the node agent may write it after the runtime starts
 * calling), a busy host lock, and the time budget (core/cni dispatch); an unusable lock file is 5;
 * credentials and rejected requests 105 / 106 ({@link apiFailure}); a CniError keeps its code.
 * Anything else is left to core/cni's dispatcher.
 */
export function directFailure(op: CniCommand, e: unknown): unknown {
  if (e instanceof CniError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  if (isUnavailable(e) || isRetriesExhausted(e))
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
  lock(onWait: () => void): Promise<HostLock>;
}

/**
 * Runs `step` holding the host lock, with an AbortSignal that fires `conf.timeoutMs` after the
 * lock was obtained. Released on every path. Logs `info` "host lock held by another process:
 * waiting" when the first try finds it held.
 * @param withoutLock run `step` without the lock when the lock file cannot be used, or when the
 *   lock was not obtained within `conf.lockTimeoutMs`, instead of failing (DEL: the lock only
 *   saves conflicts, compare-and-swap keeps every write correct; a `warn` line says so)
 * @throws whatever `step` throws; LockTimeoutError / LockFileError (unless `withoutLock`)
 */
async function underLock<T>(
  ctx: Locking,
  step: (signal: AbortSignal) => Promise<T>,
  withoutLock = false,
): Promise<T> {
  const waitStart = performance.now();
  let lock: HostLock;
  try {
    lock = await ctx.lock(() =>
      ctx.log.log('info', 'host lock held by another process: waiting', {
        lockFile: ctx.conf.lockFile,
        lockTimeoutMs: ctx.conf.lockTimeoutMs,
      }),
    );
  } catch (e) {
    if (!withoutLock || !(isLockFileError(e) || isLockTimeoutError(e))) throw e;
    ctx.log.log(
      'warn',
      isLockFileError(e)
        ? 'host lock file unusable: going on without the lock'
        : 'host lock busy: going on without the lock',
      { error: (e as Error).message },
    );
    lock = { waited: true, release: () => Promise.resolve() };
  }
  const heldAt = performance.now();
  try {
    return await step(AbortSignal.timeout(ctx.conf.timeoutMs));
  } finally {
    await lock.release();
    // On every later line (the `done` line): how long this call waited for and held the lock, ms.
    ctx.log.bind({
      lockWaitMs: Math.round(heldAt - waitStart),
      lockHeldMs: Math.round(performance.now() - heldAt),
    });
  }
}

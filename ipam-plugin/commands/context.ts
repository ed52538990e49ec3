/**
 * What every command gets from the dispatcher, and the lock + time-budget wrapper that ADD,
 * DEL and GC run their IPAM step in (the budget starts once the lock is held: docs/design-plugin.md §Host lock).
 */
import type { AttachmentRef, Backend } from '../backend/port.ts';
import type { InvocationEnv } from '../cni/env.ts';
import { isLockFileError, isLockTimeoutError, type HostLock } from '../host/lock.ts';
import type { Logger } from '../host/log.ts';
import type { NetConf } from '../cni/netconf.ts';

export interface CommandContext {
  readonly env: InvocationEnv;
  readonly conf: NetConf;
  readonly log: Logger;
  /** The backend, created on first use (once per invocation). */
  backend(): Promise<Backend>;
  /**
   * Takes the host lock, waiting at most `conf.lockTimeoutMs`; `beforeWait` runs once when
   * another process holds it (host/lock.ts).
   */
  lock(beforeWait?: () => void): Promise<HostLock>;
  /** Whether the host lock is free right now (a racy hint). */
  lockFree(): Promise<boolean>;
}

/** A command's output: the document for stdout (ADD), or undefined (nothing on stdout). */
export type CommandResult = Record<string, unknown> | undefined;
export type Command = (ctx: CommandContext) => Promise<CommandResult>;

/** This invocation's attachment (ADD, DEL, CHECK). */
export function attachmentOf(ctx: CommandContext): AttachmentRef {
  return { network: ctx.conf.name, containerID: ctx.env.containerID, ifname: ctx.env.ifname };
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
  ctx: CommandContext,
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

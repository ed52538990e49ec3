/**
 * What every command gets from the dispatcher, and the lock + time-budget wrapper that ADD,
 * DEL and GC run their IPAM step in (the budget starts once the lock is held: docs/design-plugin.md §Host lock).
 */
import type { AttachmentRef, Backend } from '../backend/port.ts';
import type { InvocationEnv } from '../cni/env.ts';
import type { HostLock } from '../host/lock.ts';
import type { Logger } from '../host/log.ts';
import type { NetConf } from '../cni/netconf.ts';

export interface CommandContext {
  readonly env: InvocationEnv;
  readonly conf: NetConf;
  readonly log: Logger;
  /** The backend, created on first use (once per invocation). */
  backend(): Promise<Backend>;
  /** Takes the host lock, waiting at most `conf.lockTimeoutMs`. */
  lock(): Promise<HostLock>;
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
 * lock was obtained and whether it had to wait for another holder. Released on every path.
 * @throws whatever `step` throws; LockTimeoutError when the lock is not obtained in time
 */
export async function underLock<T>(
  ctx: CommandContext,
  step: (signal: AbortSignal, waited: boolean) => Promise<T>,
): Promise<T> {
  const waitStart = performance.now();
  const lock = await ctx.lock();
  const heldAt = performance.now();
  try {
    return await step(AbortSignal.timeout(ctx.conf.timeoutMs), lock.waited ?? false);
  } finally {
    await lock.release();
    // On every later line (the `done` line): how long this call waited for and held the lock, ms.
    ctx.log.bind({
      lockWaitMs: Math.round(heldAt - waitStart),
      lockHeldMs: Math.round(performance.now() - heldAt),
    });
  }
}

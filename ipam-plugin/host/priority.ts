/**
 * Priority of the host lock's holder (docs/design-plugin.md §Host lock). The holder is the one
 * serial step of a node's burst: every other call is either asleep in flock(2) or still starting
 * up, and the starting ones compete with the holder for the CPU. So, while it holds the lock, the
 * plugin raises the scheduling priority of every thread of its own process (Linux nice values are
 * per thread; /proc/self/task lists them) to {@link HOLDER_NICE}, and puts each one back on
 * release — priority inheritance by hand, bounded by the lock's hold time (one block UPDATE).
 *
 * Raising needs CAP_SYS_NICE (the container runtime runs CNI plugins as root, which has it);
 * without it, or where /proc is not mounted, nothing changes and nothing fails. Only the
 * plugin's own threads are touched, never another process.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * The holder's nice value: weight 9,548 against a default thread's 1,024 in the kernel's CFS
 * table (kernel/sched/core.c `sched_prio_to_weight`), so ~9× the CPU share of each call that is
 * starting up beside it. Not -20: the API server and etcd on a node hosting the control plane
 * run at 0 too, and the holder waits on them.
 */
export const HOLDER_NICE = -10;

/**
 * Raises every thread of this process to `nice` (those already at or above it are left alone;
 * `nice` 0 or more does nothing).
 * @returns a function that puts back each thread it changed — and any thread started meanwhile,
 *   which inherited the raised value from its creator, to the main thread's value before — then
 *   does nothing more (idempotent, never throws)
 */
export function raiseThreadPriority(nice = HOLDER_NICE): () => void {
  if (nice >= 0) return () => undefined;
  const changed = new Map<number, number>();
  for (const tid of threads()) {
    try {
      const before = getPriority(tid);
      if (before <= nice) continue;
      setPriority(tid, nice);
      changed.set(tid, before);
    } catch {
      // EPERM/EACCES (no CAP_SYS_NICE) or ESRCH (the thread ended): leave it as it is
    }
  }
  return () => {
    if (changed.size === 0) return;
    const baseline = changed.get(process.pid) ?? changed.values().next().value ?? 0;
    for (const tid of threads()) {
      try {
        const before = changed.get(tid);
        if (before !== undefined) setPriority(tid, before);
        else if (getPriority(tid) === nice) setPriority(tid, baseline);
      } catch {
        // the thread ended
      }
    }
    changed.clear();
  };
}

/** This process's thread ids; none where /proc is not mounted. */
function threads(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number);
  } catch {
    return [];
  }
}

/**
 * The host-wide lock around the allocation step (docs/design-plugin.md §Host lock): `flock(2)`
 * on a lock file (netconf `ipam.lockFile`, default `<cacheDir>/ipam.lock`), called through
 * `bun:ffi`. The kernel drops the lock when the holder's file is closed — at exit, whatever the
 * cause, SIGKILL included — so a dead holder never leaves a stale lock (the file's content and
 * existence mean nothing). Waiters sleep in the kernel, one woken per release: no herd (the
 * abstract-socket lock this replaces woke every waiter on every release, so a burst of n
 * concurrent ADDs paid about n² wake-ups; docs/benchmarks.md). The same lock `flock(1)` takes,
 * so an operator can pause a node's IPAM with `flock <lockFile> sleep 60`. While it holds the
 * lock the process runs at a raised priority (priority.ts), put back on release.
 * Correctness never depends on the lock: compare-and-swap does.
 *
 * Waiting: the first attempt is non-blocking (`LOCK_EX | LOCK_NB`, one system call). Only when
 * another process holds the lock does the call block in flock, on its own thread, until a POSIX
 * timer's signal interrupts it at the timeout ({@link timedFlock}). Where that timer cannot be
 * set up, a worker thread makes the blocking call while the main thread keeps its timer: on
 * timeout the file is closed, which also drops a lock the worker gets later (the kernel releases
 * a flock when the last reference to the open file goes); the worker is unreferenced, so it
 * never keeps the process alive.
 *
 * Runtime: Bun only (the plugin ships as a Bun executable; Node has no flock). Under Node
 * {@link acquireHostLock} throws; the in-process tests inject a lock (dispatch.ts `Deps.lock`).
 */
import type * as BunFfi from 'bun:ffi';
import { closeSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDir } from './ensure-dir.ts';
import { HOLDER_NICE, raiseThreadPriority } from './priority.ts';

/** `flock(2)` operations, from <sys/file.h>. */
const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;
/** EWOULDBLOCK (= EAGAIN on Linux): held by another open file. EINTR: interrupted, retry. */
const EWOULDBLOCK = 11;
const EINTR = 4;

export interface HostLock {
  /** True when another process held the lock when this one first asked (it had to wait). */
  readonly waited?: boolean;
  /** How it waited, when it did: see {@link WaitedWith}. */
  readonly waitedWith?: WaitedWith;
  /** Releases the lock; idempotent. */
  release(): Promise<void>;
}

/**
 * How a waiter blocked in flock(2) with a timeout: `timer`, on its own thread, interrupted by a
 * POSIX timer's signal (timedFlock); `worker`, in a worker thread while the main thread keeps its
 * timer (where the timer cannot be set up).
 */
export type WaitedWith = 'timer' | 'worker';

/** The lock was not obtained within the timeout (reported as CNI code 11, try again later). */
export class LockTimeoutError extends Error {
  override readonly name = 'LockTimeoutError';
  /** How it waited (undefined: a timeout of 0, no wait). */
  readonly waitedWith?: WaitedWith;
}

export function isLockTimeoutError(e: unknown): e is LockTimeoutError {
  return e instanceof Error && e.name === 'LockTimeoutError';
}

/** The lock file could not be opened or locked (a host problem: path, permissions, filesystem). */
export class LockFileError extends Error {
  override readonly name = 'LockFileError';
}

export function isLockFileError(e: unknown): e is LockFileError {
  return e instanceof Error && e.name === 'LockFileError';
}

interface Libc {
  flock(fd: number, op: number): number;
  errno(): number;
  /**
   * A blocking `flock(fd, LOCK_EX)` on this thread that a timer interrupts after `timeoutMs`
   * ({@link timedFlock}); undefined where the timer cannot be set up (then a worker waits).
   */
  readonly timed?: (fd: number, timeoutMs: number) => number | 'timeout';
}

let libc: Promise<Libc> | undefined;

/**
 * libc's flock and errno through bun:ffi, loaded once per process (about 0.3 ms), and the timed
 * wait's symbols where they can be found ({@link loadTimerSymbols}).
 * @throws LockFileError under Node, or when libc.so.6 or its flock cannot be loaded
 */
function loadLibc(): Promise<Libc> {
  return (libc ??= (async () => {
    if (!process.versions.bun) {
      throw new LockFileError(
        'the host lock needs the Bun runtime (flock(2) through bun:ffi); Node has none',
      );
    }
    let ffi: typeof BunFfi;
    let core: { flock(fd: number, op: number): number; __errno_location(): BunFfi.Pointer | null };
    /** The timed wait's symbols when one dlopen of libc.so.6 found them all (glibc ≥ 2.34). */
    let together: Symbols | undefined;
    try {
      ffi = await import('bun:ffi');
      const { i32, ptr } = ffi.FFIType;
      const coreDefs = {
        flock: { args: [i32, i32], returns: i32 },
        __errno_location: { args: [], returns: ptr },
      };
      // One dlopen where it can be: each one compiles its own call stubs (start-up CPU, paid by
      // every call).
      try {
        const all = ffi.dlopen('libc.so.6', { ...coreDefs, ...timerDefs(ffi) }).symbols;
        core = all;
        together = all;
      } catch {
        core = ffi.dlopen('libc.so.6', coreDefs).symbols;
      }
    } catch (e) {
      throw new LockFileError(`the host lock cannot load flock(2) from libc.so.6: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const errno = (): number => {
      const p = core.__errno_location();
      return p === null ? 0 : ffi.read.i32(p, 0);
    };
    const flock = (fd: number, op: number): number => core.flock(fd, op);
    let timed: Libc['timed'];
    try {
      const symbols = together ?? loadTimerSymbols(ffi);
      timed = symbols && timedFlock(ffi, symbols, flock, errno);
    } catch {
      timed = undefined; // a worker waits instead
    }
    return { flock, errno, ...(timed ? { timed } : {}) };
  })());
}

type Symbols = {
  readonly [K in 'dlsym' | 'gettid' | 'sigaction' | 'timer_create' | 'timer_settime' | 'timer_delete']: (
    ...args: (number | bigint | null)[]
  ) => number;
};

/** The timed wait's symbols as bun:ffi declares them (all in libc.so.6 from glibc 2.34). */
function timerDefs(ffi: typeof BunFfi) {
  const { i32, ptr, u64 } = ffi.FFIType;
  return {
    dlsym: { args: [ptr, ptr], returns: ptr },
    gettid: { args: [], returns: i32 },
    sigaction: { args: [i32, ptr, ptr], returns: i32 },
    timer_create: { args: [i32, ptr, ptr], returns: i32 },
    timer_settime: { args: [u64, i32, ptr, ptr], returns: i32 },
    timer_delete: { args: [u64], returns: i32 },
  };
}

/** SYS_gettid by architecture (asm/unistd.h), for a libc without gettid(3) (glibc < 2.30). */
const SYS_GETTID: Readonly<Record<string, number>> = { x64: 186, arm64: 178 };

/**
 * The timed wait's symbols, one by one, where libc.so.6 does not hold them all: glibc 2.34
 * moved timer_* (from librt) and dlsym (from libdl) into libc.so.6, and gettid(3) came in 2.30;
 * on an older libc each is looked up where it lived, and gettid is the raw system call.
 * @returns the symbols, or undefined when one cannot be found (then a worker waits)
 */
function loadTimerSymbols(ffi: typeof BunFfi): Symbols | undefined {
  const { i64 } = ffi.FFIType;
  const defs = timerDefs(ffi);
  type Defs = Parameters<typeof BunFfi.dlopen>[1];
  const open = (libraries: readonly string[], wanted: Defs): Record<string, Symbols['dlsym']> | undefined => {
    for (const library of libraries) {
      try {
        return ffi.dlopen(library, wanted).symbols;
      } catch {
        // not in this one
      }
    }
    return undefined;
  };
  const timers = open(['libc.so.6', 'librt.so.1'], {
    timer_create: defs.timer_create,
    timer_settime: defs.timer_settime,
    timer_delete: defs.timer_delete,
  });
  const signals = open(['libc.so.6'], { sigaction: defs.sigaction });
  const dl = open(['libc.so.6', 'libdl.so.2'], { dlsym: defs.dlsym });
  let gettid = open(['libc.so.6'], { gettid: defs.gettid })?.gettid;
  const sysGettid = SYS_GETTID[process.arch];
  if (!gettid && sysGettid !== undefined) {
    const raw = open(['libc.so.6'], { syscall: { args: [i64], returns: i64 } })?.syscall;
    if (raw) gettid = () => Number(raw(BigInt(sysGettid)));
  }
  if (!timers || !signals || !dl || !gettid) return undefined;
  return {
    timer_create: timers.timer_create!,
    timer_settime: timers.timer_settime!,
    timer_delete: timers.timer_delete!,
    sigaction: signals.sigaction!,
    dlsym: dl.dlsym!,
    gettid,
  };
}

/** From <signal.h> and <time.h> (Linux, LP64: x86-64 and arm64 lay these structs out alike). */
const SIGALRM = 14;
const CLOCK_MONOTONIC = 1;
const SIGEV_THREAD_ID = 4;
/**
 * After its first expiry at the timeout, the timer repeats every REPEAT_MS (ms): a signal that
 * came while the thread was not yet (or no longer) blocked in flock — between timer_settime and
 * flock, or between an EINTR and the next flock — interrupted nothing, so the next one does.
 */
const REPEAT_MS = 10;

/**
 * The waiter's blocking flock without a second thread: a POSIX timer (timer_create, clock
 * CLOCK_MONOTONIC) sends SIGALRM to this thread only (SIGEV_THREAD_ID) at the timeout and
 * every {@link REPEAT_MS} after it, and SIGALRM's handler is installed without SA_RESTART, so
 * the blocked flock returns EINTR (signal(7): "Interruption of system calls ... by signal
 * handlers"). Whether the time is up is read from the monotonic clock after each EINTR, so a
 * SIGALRM from anyone else only makes it block again. The handler must be a native function:
 * libc's `abs`, which takes the signal number as an int and does nothing else. It stays
 * installed (the plugin never uses SIGALRM otherwise; the default action would end the process
 * on a stray one). A worker thread — what waited before — costs a JavaScript VM per waiting
 * call: 7–11 ms of CPU, most of a served waiter's own work (docs/benchmarks.md §IPAM churn).
 * @returns the timed flock, or undefined when the handler could not be installed
 */
function timedFlock(
  ffi: typeof BunFfi,
  c: Symbols,
  flock: (fd: number, op: number) => number,
  errno: () => number,
): Libc['timed'] {
  const handler = c.dlsym(null, ffi.ptr(Buffer.from('abs\0')));
  if (!handler) return undefined;
  // struct sigaction: sa_handler (8 bytes), sa_mask (128), sa_flags (int, 0: no SA_RESTART),
  // sa_restorer (glibc's own) — 152 bytes.
  const action = new BigUint64Array(19);
  action[0] = BigInt(handler);
  if (c.sigaction(SIGALRM, ffi.ptr(action), null) !== 0) return undefined;
  return (fd, timeoutMs) => {
    if (timeoutMs <= 0) return 'timeout';
    // struct sigevent: sigev_value (8), sigev_signo (int), sigev_notify (int), then the
    // union whose first member is the thread id — 64 bytes.
    const event = new Int32Array(16);
    event[2] = SIGALRM;
    event[3] = SIGEV_THREAD_ID;
    event[4] = c.gettid();
    const id = new BigUint64Array(1);
    if (c.timer_create(CLOCK_MONOTONIC, ffi.ptr(event), ffi.ptr(id)) !== 0) return -1;
    const timer = id[0]!;
    try {
      const ns = (ms: number): [bigint, bigint] => [
        BigInt(Math.floor(ms / 1000)),
        BigInt(Math.round((ms % 1000) * 1e6)),
      ];
      // struct itimerspec: it_interval {s, ns}, it_value {s, ns}.
      const spec = new BigInt64Array([...ns(REPEAT_MS), ...ns(timeoutMs)]);
      if (spec[2] === 0n && spec[3] === 0n) spec[3] = 1n; // a sub-nanosecond timeout: at once
      const start = performance.now();
      if (c.timer_settime(timer, 0, ffi.ptr(spec), null) !== 0) return -1;
      for (;;) {
        if (flock(fd, LOCK_EX) === 0) return 0;
        const e = errno();
        if (e !== EINTR) return e;
        if (performance.now() - start >= timeoutMs) return 'timeout';
      }
    } finally {
      c.timer_delete(timer);
    }
  };
}

/** `flock(fd, op)`, retried on EINTR. @returns 0, or the errno */
function flockOnce(c: Libc, fd: number, op: number): number {
  for (;;) {
    if (c.flock(fd, op) === 0) return 0;
    const errno = c.errno();
    if (errno !== EINTR) return errno;
  }
}

/**
 * The worker's source: one blocking `flock(fd, LOCK_EX)` per message, answering 0 or the errno.
 * A string (not a file) so that the compiled executable needs no second entry point.
 */
const workerSource = `
import { dlopen, FFIType, read } from 'bun:ffi';
const { symbols } = dlopen('libc.so.6', {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
});
self.onmessage = (e) => {
  for (;;) {
    if (symbols.flock(e.data, ${LOCK_EX}) === 0) return postMessage(0);
    const errno = read.i32(symbols.__errno_location(), 0);
    if (errno !== ${EINTR}) return postMessage(errno);
  }
};`;

/** The web Worker of Bun's global scope (5–9 ms to start; node:worker_threads' eval takes ~30). */
interface BunWorker {
  onmessage: ((e: { data: number }) => void) | null;
  onerror: ((e: { preventDefault(): void }) => void) | null;
  postMessage(m: number): void;
  unref(): void;
}
type BunWorkerConstructor = new (url: string) => BunWorker;

/** Blocks in a worker thread until the lock on `fd` is held. @returns 0 or the errno */
function flockBlocking(fd: number, timeoutMs: number): Promise<number | 'timeout'> {
  const url = URL.createObjectURL(new Blob([workerSource], { type: 'application/javascript' }));
  const worker = new (globalThis as unknown as { Worker: BunWorkerConstructor }).Worker(url);
  worker.unref();
  return new Promise<number | 'timeout'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), timeoutMs);
    worker.onmessage = (e) => {
      clearTimeout(timer);
      resolve(e.data);
    };
    worker.onerror = (e) => {
      clearTimeout(timer);
      resolve(-1);
      e.preventDefault();
    };
    worker.postMessage(fd);
  }).finally(() => {
    URL.revokeObjectURL(url);
  });
}

function openLockFile(path: string): number {
  try {
    ensureDir(dirname(path), 0o700); // never a recursive mkdir on a user path (ensure-dir.ts)
    return openSync(path, 'a', 0o600);
  } catch (e) {
    throw new LockFileError(`host lock file ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Acquires the host lock on `path`.
 * @param path the lock file (created, with its directory, when missing; mode 0600)
 * @param timeoutMs how long to wait; 0 tries once
 * @param holderNice the threads' nice value while the lock is held (priority.ts); 0: unchanged
 * @param beforeWait called once, synchronously, when another process holds the lock and this
 *   one is about to wait for it (an ADD or DEL queues its request for the holder: lock-queue.ts);
 *   an exception from it propagates and nothing is waited for
 * @param waitWith 'worker' waits in a worker thread even where the timer works (tests of that
 *   path); default 'timer', with the worker as the fallback
 * @throws LockTimeoutError when not acquired in time; LockFileError when the file cannot be
 *   opened or locked, or not under Bun
 */
export async function acquireHostLock(
  path: string,
  timeoutMs = 60_000,
  holderNice = HOLDER_NICE,
  beforeWait?: () => void,
  waitWith: WaitedWith = 'timer',
): Promise<HostLock> {
  const c = await loadLibc();
  const fd = openLockFile(path);
  let r: number | 'timeout' = flockOnce(c, fd, LOCK_EX | LOCK_NB);
  if (r === 0) return holding(fd, false, holderNice);
  if (r === EWOULDBLOCK && beforeWait) {
    try {
      beforeWait();
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }
  let waitedWith: WaitedWith | undefined;
  if (r === EWOULDBLOCK && timeoutMs <= 0) r = 'timeout';
  else if (r === EWOULDBLOCK) {
    const timed = (waitWith === 'timer' ? c.timed?.(fd, timeoutMs) : undefined) ?? -1;
    waitedWith = timed === -1 ? 'worker' : 'timer';
    r = timed === -1 ? await flockBlocking(fd, timeoutMs) : timed;
  }
  if (r === 0) return holding(fd, true, holderNice, waitedWith);
  closeSync(fd);
  if (r === 'timeout')
    throw Object.assign(new LockTimeoutError(`host lock ${path} not acquired within ${timeoutMs} ms`), {
      waitedWith,
    });
  throw new LockFileError(`host lock ${path}: flock failed (errno ${r})`);
}

/**
 * Whether the lock is free right now: a shared, non-blocking flock on a second open file, dropped
 * at once. A hint only (the answer can be stale the moment it is returned); false also while
 * this process holds the lock.
 */
export async function isHostLockFree(path: string): Promise<boolean> {
  const c = await loadLibc();
  const fd = openLockFile(path);
  try {
    return flockOnce(c, fd, LOCK_SH | LOCK_NB) === 0;
  } finally {
    closeSync(fd);
  }
}

function holding(fd: number, waited: boolean, holderNice: number, waitedWith?: WaitedWith): HostLock {
  let released = false;
  const restorePriority = raiseThreadPriority(holderNice);
  return {
    waited,
    ...(waitedWith ? { waitedWith } : {}),
    release() {
      if (!released) {
        released = true;
        closeSync(fd);
        restorePriority();
      }
      return Promise.resolve();
    },
  };
}

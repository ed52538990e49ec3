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
 * another process holds the lock does a worker thread make the blocking call, so the main thread
 * keeps its timer: on timeout the file is closed, which also drops a lock the worker gets later
 * (the kernel releases a flock when the last reference to the open file goes). The worker is
 * unreferenced: it never keeps the process alive.
 *
 * Runtime: Bun only (the plugin ships as a Bun executable; Node has no flock). Under Node
 * {@link acquireHostLock} throws; the in-process tests inject a lock (dispatch.ts `Deps.lock`).
 */
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
  /** Releases the lock; idempotent. */
  release(): Promise<void>;
}

/** The lock was not obtained within the timeout (reported as CNI code 11, try again later). */
export class LockTimeoutError extends Error {
  override readonly name = 'LockTimeoutError';
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
}

let libc: Promise<Libc> | undefined;

/** libc's flock and errno through bun:ffi, loaded once per process (about 0.3 ms). */
function loadLibc(): Promise<Libc> {
  return (libc ??= (async () => {
    if (!process.versions.bun) {
      throw new LockFileError(
        'the host lock needs the Bun runtime (flock(2) through bun:ffi); Node has none',
      );
    }
    const ffi = await import('bun:ffi');
    const { symbols } = ffi.dlopen('libc.so.6', {
      flock: { args: [ffi.FFIType.i32, ffi.FFIType.i32], returns: ffi.FFIType.i32 },
      __errno_location: { args: [], returns: ffi.FFIType.ptr },
    });
    return {
      flock: (fd, op) => symbols.flock(fd, op),
      errno: () => {
        const p = symbols.__errno_location();
        return p === null ? 0 : ffi.read.i32(p, 0);
      },
    };
  })());
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
 * @throws LockTimeoutError when not acquired in time; LockFileError when the file cannot be
 *   opened or locked, or not under Bun
 */
export async function acquireHostLock(
  path: string,
  timeoutMs = 60_000,
  holderNice = HOLDER_NICE,
  beforeWait?: () => void,
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
  if (r === EWOULDBLOCK) r = timeoutMs > 0 ? await flockBlocking(fd, timeoutMs) : 'timeout';
  if (r === 0) return holding(fd, true, holderNice);
  closeSync(fd);
  if (r === 'timeout') throw new LockTimeoutError(`host lock ${path} not acquired within ${timeoutMs} ms`);
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

function holding(fd: number, waited: boolean, holderNice: number): HostLock {
  let released = false;
  const restorePriority = raiseThreadPriority(holderNice);
  return {
    waited,
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

/**
 * The direct path's host lock (docs/design-plugin.md §Host lock): `flock(2)` on a lock file
 * (netconf `ipam.lockFile`, default `<cacheDir>/ipam.lock`), called through `bun:ffi`. The
 * kernel drops the lock when the holder's file is closed — at exit, whatever the cause, SIGKILL
 * included — so a dead holder never leaves a stale lock (the file's content and existence mean
 * nothing). It is the lock `flock(1)` takes, so an operator can pause a node's direct path with
 * `flock <lockFile> sleep 60`. Correctness never depends on the lock: compare-and-swap does.
 *
 * Waiting: `flock(LOCK_EX | LOCK_NB)`, tried again every {@link POLL_MS} until it is held or
 * `timeoutMs` has passed. The thread never blocks, so every timer of the process (the API
 * requests' deadlines included) runs on time, and nothing needs interrupting at the timeout.
 *
 * Runtime: Bun only (the plugin ships as a Bun executable; Node has no flock). Under Node
 * {@link acquireHostLock} throws a LockFileError; in-process tests inject a lock (direct.ts
 * `DirectDeps.lock`).
 */
import type * as BunFfi from 'bun:ffi';
import { closeSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDir } from 'blockipam/core/cni';

/** `flock(2)` operations, from <sys/file.h>. */
const LOCK_EX = 2;
const LOCK_NB = 4;
/** EWOULDBLOCK (= EAGAIN on Linux): held by another open file. EINTR: interrupted, retry. */
const EWOULDBLOCK = 11;
const EINTR = 4;

/**
 * 10 ms between tries: a hand-over costs 5 ms on average, small beside one API round trip of the
 * holder, and a waiter costs one system call and one timer per try (~100 per second at most).
 */
const POLL_MS = 10;

export interface HostLock {
  /** True when another process held the lock when this one first asked (it had to wait). */
  readonly waited: boolean;
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

type Flock = (fd: number, op: number) => number;

let libc: Promise<Flock> | undefined;

/**
 * libc's flock through bun:ffi, loaded once per process: a function returning 0 or the errno
 * (EINTR retried).
 * @throws LockFileError under Node, or when libc.so.6 or its flock cannot be loaded
 */
function loadFlock(): Promise<Flock> {
  return (libc ??= (async () => {
    if (!process.versions.bun)
      throw new LockFileError(
        'the host lock needs the Bun runtime (flock(2) through bun:ffi); Node has none',
      );
    let ffi: typeof BunFfi;
    let sym: { flock(fd: number, op: number): number; __errno_location(): BunFfi.Pointer | null };
    try {
      ffi = await import('bun:ffi');
      const { i32, ptr } = ffi.FFIType;
      sym = ffi.dlopen('libc.so.6', {
        flock: { args: [i32, i32], returns: i32 },
        __errno_location: { args: [], returns: ptr },
      }).symbols;
    } catch (e) {
      throw new LockFileError(`the host lock cannot load flock(2) from libc.so.6: ${(e as Error).message}`, {
        cause: e,
      });
    }
    return (fd, op) => {
      for (;;) {
        if (sym.flock(fd, op) === 0) return 0;
        const p = sym.__errno_location();
        const errno = p === null ? 0 : ffi.read.i32(p, 0);
        if (errno !== EINTR) return errno;
      }
    };
  })());
}

function openLockFile(path: string): number {
  try {
    ensureDir(dirname(path), 0o700); // never a recursive mkdir on a user path (core's ensure-dir.ts)
    return openSync(path, 'a', 0o600);
  } catch (e) {
    throw new LockFileError(`host lock file ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Acquires the host lock on `path`.
 * @param path the lock file (created, with its directory, when missing; mode 0600)
 * @param timeoutMs how long to keep trying, ms; 0 tries once
 * @param onWait called once, synchronously, when the first try finds the lock held (the caller
 *   logs that it waits); an exception from it propagates and nothing is waited for
 * @throws LockTimeoutError when not acquired in time; LockFileError when the file cannot be
 *   opened or locked, or not under Bun
 */
export async function acquireHostLock(
  path: string,
  timeoutMs: number,
  onWait?: () => void,
): Promise<HostLock> {
  const flock = await loadFlock();
  const fd = openLockFile(path);
  const until = performance.now() + timeoutMs;
  let r = flock(fd, LOCK_EX | LOCK_NB);
  const waited = r === EWOULDBLOCK;
  if (waited) {
    try {
      onWait?.();
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }
  while (r === EWOULDBLOCK && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, until - performance.now())));
    r = flock(fd, LOCK_EX | LOCK_NB);
  }
  if (r === 0) return holding(fd, waited);
  closeSync(fd);
  if (r === EWOULDBLOCK) throw new LockTimeoutError(`host lock ${path} not acquired within ${timeoutMs} ms`);
  throw new LockFileError(`host lock ${path}: flock failed (errno ${r})`);
}

function holding(fd: number, waited: boolean): HostLock {
  let released = false;
  return {
    waited,
    release() {
      if (!released) {
        released = true;
        closeSync(fd);
      }
      return Promise.resolve();
    },
  };
}

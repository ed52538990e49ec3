/**
 * The host-wide lock around the allocation step (docs/design-plugin.md §Host lock): an abstract-namespace Unix
 * socket bound with `listen()`. Only one process can bind a name; the kernel unbinds it when
 * the holder exits for any reason, SIGKILL included, so a dead holder never leaves a stale lock
 * (no file to clean up, unlike a pid file or a path socket). Waiters connect to the holder and
 * retry the bind when that connection closes (the holder released or died), with a poll as a
 * backstop. Scope: abstract names belong to a network namespace; runtimes run CNI plugins in
 * the host's, so the lock is host-wide (in the e2e tests, a "node" netns is one host).
 * Correctness never depends on the lock: compare-and-swap does.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** Default lock name: one per host for every blockipam network (they share the node's blocks). */
export const defaultLockName = 'blockipam/ipam.lock';

/**
 * 1 s: how long a waiter waits on one connection to the holder before trying the bind again — a
 * backstop in case a wake-up is missed (normal hand-over is event-driven: the holder's close).
 */
const pollMs = 1000;

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

function tryBind(name: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    const sockets = new Set<Socket>();
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    });
    (server as Server & { holderSockets?: Set<Socket> }).holderSockets = sockets;
    server.once('error', (e: NodeJS.ErrnoException) =>
      e.code === 'EADDRINUSE' ? resolve(undefined) : reject(e),
    );
    server.listen({ path: `\0${name}` }, () => resolve(server));
  });
}

/** Resolves when the holder's connection closes, the poll interval passes, or `until` is reached. */
function waitForHolder(name: string, until: number): Promise<void> {
  return new Promise((resolve) => {
    const s = createConnection({ path: `\0${name}` });
    const done = (): void => {
      clearTimeout(t);
      s.destroy();
      resolve();
    };
    const t = setTimeout(done, Math.max(0, Math.min(pollMs, until - Date.now())));
    s.on('error', done);
    s.on('close', done);
  });
}

/**
 * Acquires the named host lock.
 * @param name abstract socket name (no leading NUL). Default {@link defaultLockName}.
 * @param timeoutMs how long to wait; 0 tries once.
 * @throws LockTimeoutError when not acquired in time; Error for unexpected socket errors
 */
export async function acquireHostLock(name: string = defaultLockName, timeoutMs = 60_000): Promise<HostLock> {
  const until = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const server = await tryBind(name);
    if (server) return holding(server, attempt > 0);
    if (Date.now() >= until)
      throw new LockTimeoutError(`host lock ${name} not acquired within ${timeoutMs} ms`);
    await waitForHolder(name, until);
  }
}

/**
 * Whether the lock is free right now: binds and at once unbinds the name. A hint only (the
 * answer can be stale the moment it is returned).
 */
export async function isHostLockFree(name: string = defaultLockName): Promise<boolean> {
  const server = await tryBind(name);
  if (!server) return false;
  await holding(server, false).release();
  return true;
}

function holding(server: Server, waited: boolean): HostLock {
  let released = false;
  return {
    waited,
    release() {
      if (released) return Promise.resolve();
      released = true;
      const sockets = (server as Server & { holderSockets?: Set<Socket> }).holderSockets ?? new Set<Socket>();
      return new Promise((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

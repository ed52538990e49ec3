/**
 * Test helper process (run with Bun: the host lock is flock(2) through bun:ffi):
 *   bun lock-holder.ts PATH [--hold MS] [--timeout MS] [--stay] [--log FILE] [--free]
 *     [--nice N] [--start-nice N] [--threads] [--worker]
 * Takes the host lock on PATH (waiting at most --timeout, default 10 000 ms) and prints
 * "held waited=<true|false>"; holds it until killed or, with --hold, for MS ms, then releases it,
 * prints "released" and exits. On a timeout it prints "timeout" (and with --stay keeps running
 * without the lock); on another error "error <name>: <message>". --log appends "enter <pid>" and
 * "exit <pid>" lines around the hold (one write each, O_APPEND). --free prints "free <bool>"
 * (isHostLockFree) and exits. --nice is the holder's nice value (acquireHostLock's holderNice);
 * --start-nice sets every thread's nice value first; --threads prints "threads <nice values of
 * this process's threads, sorted>" after "held" and again after "released". A waiter's "held" and
 * "timeout" lines end in "with=timer" or "with=worker" (how it waited); --worker makes it wait in
 * a worker thread.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parseArgs } from 'node:util';
import { acquireHostLock, isHostLockFree, isLockTimeoutError } from '../../../ipam-plugin/host/lock.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    hold: { type: 'string' },
    timeout: { type: 'string', default: '10000' },
    stay: { type: 'boolean', default: false },
    log: { type: 'string' },
    free: { type: 'boolean', default: false },
    nice: { type: 'string' },
    'start-nice': { type: 'string' },
    threads: { type: 'boolean', default: false },
    worker: { type: 'boolean', default: false },
  },
});
const tids = (): string[] => readdirSync('/proc/self/task');
/** Field 19 of /proc/<tid>/stat (the nice value), after the ")" that ends the command name. */
const niceOf = (tid: string): number =>
  Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ')[16]);
const threads = (): void => {
  if (values.threads)
    out(
      `threads ${tids()
        .map(niceOf)
        .sort((a, b) => a - b)
        .join(',')}`,
    );
};
if (values['start-nice'] !== undefined)
  for (const tid of tids()) setPriority(Number(tid), Number(values['start-nice']));
const path = positionals[0];
if (path === undefined) throw new Error('usage: lock-holder.ts PATH [options]');
const out = (line: string): void => void process.stdout.write(`${line}\n`);
if (values.free) {
  out(`free ${String(await isHostLockFree(path))}`);
  process.exit(0);
}
try {
  const lock = await acquireHostLock(
    path,
    Number(values.timeout),
    values.nice === undefined ? undefined : Number(values.nice),
    undefined,
    values.worker ? 'worker' : 'timer',
  );
  if (values.log) appendFileSync(values.log, `enter ${process.pid}\n`);
  out(`held waited=${String(lock.waited ?? false)}${lock.waitedWith ? ` with=${lock.waitedWith}` : ''}`);
  threads();
  if (values.hold === undefined) setInterval(() => undefined, 60_000);
  else {
    setTimeout(() => {
      if (values.log) appendFileSync(values.log, `exit ${process.pid}\n`);
      void lock.release().then(() => {
        out('released');
        threads();
      });
    }, Number(values.hold));
  }
} catch (e) {
  if (isLockTimeoutError(e)) {
    out(`timeout${e.waitedWith ? ` with=${e.waitedWith}` : ''}`);
    if (values.stay) setInterval(() => undefined, 60_000);
  } else {
    out(`error ${(e as Error).name}: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}

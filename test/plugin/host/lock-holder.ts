/**
 * Test helper process (run with Bun: the host lock is flock(2) through bun:ffi):
 *   bun lock-holder.ts PATH [--hold MS] [--timeout MS] [--stay] [--log FILE]
 * Takes the host lock on PATH (trying for at most --timeout, default 10 000 ms); prints "waiting"
 * when the first try finds it held, then "held waited=<true|false>"; holds it until killed or,
 * with --hold, for MS ms, then releases it, prints "released" and exits. On a timeout it prints
 * "timeout" (and with --stay keeps running without the lock); on another error "error <name>:
 * <message>". --log appends "enter <pid>" and "exit <pid>" lines around the hold (one write
 * each, O_APPEND).
 */
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { acquireHostLock, isLockTimeoutError } from '../../../ipam-plugin/host/lock.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    hold: { type: 'string' },
    timeout: { type: 'string', default: '10000' },
    stay: { type: 'boolean', default: false },
    log: { type: 'string' },
  },
});
const path = positionals[0];
if (path === undefined) throw new Error('usage: lock-holder.ts PATH [options]');
const out = (line: string): void => void process.stdout.write(`${line}\n`);
try {
  const lock = await acquireHostLock(path, Number(values.timeout), () => out('waiting'));
  if (values.log) appendFileSync(values.log, `enter ${process.pid}\n`);
  out(`held waited=${String(lock.waited)}`);
  if (values.hold === undefined) setInterval(() => undefined, 60_000);
  else {
    setTimeout(() => {
      if (values.log) appendFileSync(values.log, `exit ${process.pid}\n`);
      void lock.release().then(() => out('released'));
    }, Number(values.hold));
  }
} catch (e) {
  if (isLockTimeoutError(e)) {
    out('timeout');
    if (values.stay) setInterval(() => undefined, 60_000);
  } else {
    out(`error ${(e as Error).name}: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}

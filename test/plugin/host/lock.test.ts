/**
 * The host lock (ipam-plugin/host/lock.ts: flock(2) through bun:ffi, LOCK_NB tried every 10 ms)
 * with real Bun processes and util-linux's flock(1) as an independent observer: mutual exclusion
 * under contention, hand-over on release, a SIGKILLed holder frees the lock, a timed-out waiter
 * never takes it later, a lock file that cannot be created is a clear error.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { holdLock, lockProcess, type LockProcess } from '../helpers/host-lock.ts';

const dir = mkdtempSync(join(tmpdir(), 'bipam-lock-'));
const procs: LockProcess[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.kill()));
  rmSync(dir, { recursive: true, force: true });
});
let n = 0;
const lockFile = (): string => join(dir, `l${n++}`, 'ipam.lock');
const track = (p: LockProcess): LockProcess => (procs.push(p), p);
/** flock(1): exit 0 when it could take the lock without waiting, 1 when it is held. */
const freeToFlock1 = (path: string): boolean => spawnSync('flock', ['--nonblock', path, 'true']).status === 0;

void describe('host lock (flock)', () => {
  void it('creates the file (0600) and its directory; a second acquirer times out while it is held', async () => {
    const path = lockFile();
    track(await holdLock(path));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(freeToFlock1(path), false, 'flock(1) sees the lock held');
    const b = track(lockProcess([path, '--timeout', '300']));
    assert.equal(await b.next(/^(held|timeout|error)/), 'timeout');
    assert.equal(b.lines[0], 'waiting', 'it said it waited');
  });

  void it('a waiter gets the lock when the holder releases, and knows it waited', async () => {
    const path = lockFile();
    const a = track(lockProcess([path, '--hold', '400']));
    assert.equal(await a.next(/^held/), 'held waited=false');
    const b = track(lockProcess([path, '--timeout', '10000']));
    assert.equal(await b.next(/^held|timeout|error/), 'held waited=true');
    await a.next(/^released/);
  });

  void it('SIGKILL of the holder frees the lock for the process waiting for it', async () => {
    const path = lockFile();
    const a = track(await holdLock(path));
    const b = track(lockProcess([path, '--timeout', '20000']));
    await b.next(/^waiting/);
    await a.kill();
    assert.equal(await b.next(/^held|timeout|error/), 'held waited=true');
  });

  void it('a waiter that timed out never takes the lock afterwards', async () => {
    const path = lockFile();
    const a = track(await holdLock(path));
    const b = track(lockProcess([path, '--timeout', '200', '--stay']));
    assert.equal(await b.next(/^held|timeout|error/), 'timeout');
    await a.kill();
    assert.equal(b.child.exitCode, null, 'the timed-out process is still running');
    assert.equal(freeToFlock1(path), true, 'nobody holds the lock');
  });

  void it('a timeout of 0 tries once', async () => {
    const path = lockFile();
    track(await holdLock(path));
    assert.equal(await track(lockProcess([path, '--timeout', '0'])).next(/^held|timeout|error/), 'timeout');
  });

  void it('is the lock flock(1) takes: an operator can pause a node with `flock <lockFile> …`', async () => {
    const path = lockFile();
    mkdirSync(dirname(path));
    // --no-fork: flock(1) execs sleep itself, so the PID we kill is the one holding the lock.
    const op = spawn('flock', ['--no-fork', path, 'sleep', '600'], { stdio: 'ignore' });
    children.push(op);
    while (freeToFlock1(path)) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await track(lockProcess([path, '--timeout', '300'])).next(/^held|timeout|error/), 'timeout');
    const b = track(lockProcess([path, '--timeout', '20000']));
    await b.next(/^waiting/);
    op.kill('SIGKILL');
    assert.equal(await b.next(/^held|timeout|error/), 'held waited=true');
  });

  void it('12 processes contending: every one gets it, never two at once', async () => {
    const path = lockFile();
    const log = join(dir, `contend-${n}.log`);
    const ps = Array.from({ length: 12 }, () =>
      track(lockProcess([path, '--hold', '20', '--timeout', '60000', '--log', log])),
    );
    await Promise.all(ps.map((p) => p.next(/^released/)));
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    assert.equal(lines.length, 24);
    for (let i = 0; i < lines.length; i += 2) {
      const [enter, pid] = lines[i]!.split(' ');
      assert.equal(enter, 'enter', `line ${i}: ${lines[i]}`);
      assert.equal(lines[i + 1], `exit ${pid}`, `the holder after ${lines[i]} entered before it left`);
    }
  });

  void it('a lock file that cannot be created is a LockFileError naming the path', async () => {
    const path = '/proc/blockipam-no-such-dir/ipam.lock';
    const line = await track(lockProcess([path])).next(/./);
    assert.match(line, /^error LockFileError: host lock file \/proc\/blockipam-no-such-dir\/ipam\.lock: /);
  });
});

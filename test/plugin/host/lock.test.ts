/**
 * The host lock (ipam-plugin/lock.ts) with real processes: mutual exclusion, hand-over on
 * release, and — the point of the design — a holder killed with SIGKILL frees the lock.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { acquireHostLock, isLockTimeoutError } from '../../../ipam-plugin/host/lock.ts';

const holderScript = join(import.meta.dirname, 'lock-holder.ts');
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Starts a holder process and resolves once it printed "held". */
async function holder(name: string, holdMs?: number): Promise<ChildProcess> {
  const args = [holderScript, name, ...(holdMs === undefined ? [] : [String(holdMs)])];
  const c = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(c);
  const [chunk] = (await once(c.stdout, 'data')) as [Buffer];
  assert.equal(chunk.toString().trim(), 'held');
  return c;
}

const unique = (tag: string): string => `blockipam-test/${tag}/${process.pid}`;

void describe('host lock', () => {
  void it('a second acquirer times out while another process holds it', async () => {
    const name = unique('busy');
    await holder(name);
    await assert.rejects(acquireHostLock(name, 300), (e) => isLockTimeoutError(e));
  });

  void it('a waiter gets the lock when the holder releases', async () => {
    const name = unique('handover');
    const c = await holder(name, 300);
    const lock = await acquireHostLock(name, 5_000);
    assert.equal(c.exitCode === null || c.exitCode === 0, true);
    await lock.release();
  });

  void it('SIGKILL of the holder frees the lock (kernel unbinds the abstract socket)', async () => {
    const name = unique('sigkill');
    const c = await holder(name);
    await assert.rejects(acquireHostLock(name, 100), (e) => isLockTimeoutError(e));
    const waiting = acquireHostLock(name, 5_000);
    c.kill('SIGKILL');
    const lock = await waiting;
    const [, signal] = (await once(c, 'exit')) as [number | null, string | null];
    assert.equal(signal, 'SIGKILL');
    await lock.release();
  });

  void it('release is idempotent and the name is reusable in-process', async () => {
    const name = unique('reuse');
    const a = await acquireHostLock(name, 0);
    await assert.rejects(acquireHostLock(name, 0), (e) => isLockTimeoutError(e));
    await a.release();
    await a.release();
    const b = await acquireHostLock(name, 0);
    await b.release();
  });
});

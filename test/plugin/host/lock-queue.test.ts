// The lock queue's files (ipam-plugin/host/lock-queue.ts; docs/design-plugin.md §Host lock,
// "Combining"): a queued request is taken once, a withdrawn one never, a taken one cannot be
// withdrawn (the waiter then waits for the answer); foreign, expired, dead, corrupt or unsafe
// requests are not taken, and the expired and dead ones are removed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  answerQueued,
  takeQueued,
  ticketFor,
  type QueueScope,
  type QueuedAssign,
  type QueuedRequest,
  type QueuedWork,
} from '../../../ipam-plugin/host/lock-queue.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-lock-queue-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
function scope(extra: Partial<QueueScope> = {}): QueueScope {
  return { dir: join(tmp, `q${++n}`, 'ipam.lock.queue'), cluster: 'c1', node: 'node-1', ...extra };
}
const assign = (handle: string): QueuedAssign => ({
  handle,
  network: 'n',
  node: 'node-1',
  pod: { namespace: 'ns', name: handle, uid: `uid-${handle}` },
  nodeLabels: { zone: 'a' },
  namespaceLabels: {},
  ipv4: true,
  ipv6: false,
});
const add = (handle: string): QueuedWork => ({ kind: 'add', request: assign(handle) });
const address = {
  family: 4 as const,
  address: '10.1.0.5',
  prefixLength: 26,
  gateway: '10.1.0.1',
  block: '10-1-0-0-26',
  blockCidr: '10.1.0.0/26',
  pool: 'p',
  ordinal: 5,
  sequence: 3,
  borrowed: false,
};
const soon = (): number => Date.now() + 60_000;
const handleOf = (q: QueuedRequest): string => (q.kind === 'add' ? q.request.handle : q.release.handle);

void describe('lock queue', () => {
  void it('a queued request is taken once, answered, and its files removed by the waiter', () => {
    const s = scope();
    const t = ticketFor(s, add('h1'), soon());
    assert.equal(t.queued, false);
    assert.equal(t.withdraw(), 'none', 'never queued');
    t.enqueue();
    assert.equal(t.queued, true);
    const taken = takeQueued(s);
    assert.deepEqual(taken, [{ id: t.id, ...add('h1') }]);
    assert.deepEqual(takeQueued(s), [], 'taken once');
    assert.equal(t.answer(), undefined);
    answerQueued(s, t.id, { served: { ipv4: address } });
    assert.deepEqual(t.answer(), { served: { ipv4: address } });
    assert.equal(t.withdraw(), 'taken', 'a taken request cannot be withdrawn');
    t.remove();
    assert.deepEqual(readdirSync(s.dir), []);
  });

  void it('a withdrawn request is never taken', () => {
    const s = scope();
    const t = ticketFor(s, add('h1'), soon());
    t.enqueue();
    assert.equal(t.withdraw(), 'withdrawn');
    assert.deepEqual(takeQueued(s), []);
  });

  void it('"not served" is an answer without addresses', () => {
    const s = scope();
    const t = ticketFor(s, add('h1'), soon());
    t.enqueue();
    assert.equal(takeQueued(s).length, 1);
    answerQueued(s, t.id, {});
    assert.deepEqual(t.answer(), {});
  });

  void it('a DEL’s release is queued and answered with the count released; a holder without a snapshot takes only DELs', () => {
    const s = scope();
    const a = ticketFor(s, add('a'), soon());
    const d = ticketFor(
      s,
      { kind: 'del', release: { handle: 'h-del', node: 'node-1', podUID: 'u1' } },
      soon(),
    );
    a.enqueue();
    d.enqueue();
    assert.deepEqual(takeQueued(s, { kinds: new Set(['del'] as const) }), [
      { id: d.id, kind: 'del', release: { handle: 'h-del', node: 'node-1', podUID: 'u1' } },
    ]);
    answerQueued(s, d.id, { released: 1 });
    assert.deepEqual(d.answer(), { released: 1 });
    assert.deepEqual(takeQueued(s).map(handleOf), ['a'], 'the ADD stayed queued');
  });

  void it('takes at most the limit, nearest deadline first', () => {
    const s = scope();
    const tickets = [3, 1, 2].map((k) => ticketFor(s, add(`h${k}`), soon() + k * 1000));
    for (const t of tickets) t.enqueue();
    assert.deepEqual(takeQueued(s, { limit: 2 }).map(handleOf), ['h1', 'h2']);
    assert.deepEqual(takeQueued(s, { limit: 2 }).map(handleOf), ['h3']);
  });

  void it('another cluster’s or node’s request stays; an expired one or a dead waiter’s is removed', () => {
    const s = scope();
    const foreign = ticketFor({ ...s, cluster: 'c2' }, add('f'), soon());
    const otherNode = ticketFor(
      { ...s, node: 'node-2' },
      { kind: 'add', request: { ...assign('o'), node: 'node-2' } },
      soon(),
    );
    const expired = ticketFor(s, add('e'), Date.now() + 500); // inside the 2 s margin
    const dead = ticketFor(s, add('d'), soon());
    for (const t of [foreign, otherNode, expired, dead]) t.enqueue();
    // `dead`: every ticket here names this process, so the liveness check is what says dead
    assert.deepEqual(takeQueued(s, { alive: () => false }), [], 'nothing taken');
    assert.ok(existsSync(join(s.dir, `${foreign.id}.req`)), 'foreign kept');
    assert.ok(existsSync(join(s.dir, `${otherNode.id}.req`)), 'other node kept');
    assert.ok(!existsSync(join(s.dir, `${expired.id}.req`)), 'expired removed');
    assert.ok(!existsSync(join(s.dir, `${dead.id}.req`)), 'dead waiter’s request removed');
  });

  void it('by default a waiter is alive while its process is (signal 0)', () => {
    const s = scope();
    const live = ticketFor(s, add('live'), soon());
    live.enqueue();
    const exited = spawnSync('true').pid;
    assert.ok(exited !== undefined);
    const id = `${exited}-${'a'.repeat(32)}`;
    const doc = {
      version: 1,
      id,
      cluster: 'c1',
      node: 'node-1',
      pid: exited,
      deadline: soon(),
      work: add('gone'),
    };
    writeFileSync(join(s.dir, `${id}.req`), JSON.stringify(doc), { mode: 0o600 });
    assert.deepEqual(takeQueued(s).map(handleOf), ['live']);
    assert.ok(!existsSync(join(s.dir, `${id}.req`)), 'the exited process’ request removed');
  });

  void it('corrupt, mis-named, ill-typed or group-writable requests are not taken', () => {
    const s = scope();
    const good = ticketFor(s, add('g'), soon());
    good.enqueue();
    const id = (k: number): string => `${process.pid}-${String(k).padStart(32, '0')}`;
    const doc = (i: string, r: unknown, kind = 'add'): string =>
      JSON.stringify({
        version: 1,
        id: i,
        cluster: 'c1',
        node: 'node-1',
        pid: process.pid,
        deadline: soon(),
        work: kind === 'add' ? { kind, request: r } : { kind, release: r },
      });
    writeFileSync(join(s.dir, `${id(1)}.req`), '{not json', { mode: 0o600 });
    writeFileSync(join(s.dir, `${id(2)}.req`), doc(id(99), assign('x')), { mode: 0o600 }); // id ≠ name
    writeFileSync(join(s.dir, `${id(3)}.req`), doc(id(3), { ...assign('x'), ipv4: 'yes' }), { mode: 0o600 });
    writeFileSync(join(s.dir, `${id(4)}.req`), doc(id(4), { ...assign('x'), node: 'node-2' }), {
      mode: 0o600,
    });
    writeFileSync(join(s.dir, `${id(5)}.req`), doc(id(5), { ...assign('x'), pools: [1] }), { mode: 0o600 });
    writeFileSync(join(s.dir, `${id(6)}.req`), doc(id(6), assign('x')), { mode: 0o600 });
    chmodSync(join(s.dir, `${id(6)}.req`), 0o666);
    writeFileSync(join(s.dir, `${id(7)}.req`), doc(id(7), { handle: 'x', node: 'node-2' }, 'del'), {
      mode: 0o600,
    });
    writeFileSync(join(s.dir, `${id(8)}.req`), doc(id(8), { handle: 'x', node: 'node-1' }, 'evict'), {
      mode: 0o600,
    });
    assert.deepEqual(takeQueued(s).map(handleOf), ['g']);
  });
});

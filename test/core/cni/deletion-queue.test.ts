/**
 * The node's deletion queue (core/cni/deletion-queue.ts): root-only and durable on disk, one
 * entry per attachment, bounded (full: refused, never dropped), and a replay that releases by
 * handle, removes what it released, keeps what failed and is idempotent.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  CniCode,
  CniError,
  deletionQueueDirOf,
  enqueueDel,
  isDeletionQueueFullError,
  queueableDelFailure,
  queuedFileName,
  queuedFiles,
  readDeletionQueue,
  replayDeletionQueue,
  type QueuedDel,
} from 'blockipam/core/cni';
import type { DelCall } from 'blockipam/core/node-ipam';

const root = mkdtempSync(join(tmpdir(), 'bipam-delq-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
/** A fresh queue directory (not created yet). */
const freshDir = (): string => deletionQueueDirOf(join(root, `agent-${n++}`, 'ipam.sock'));
const entry = (containerID: string, extra: Partial<QueuedDel> = {}): QueuedDel => ({
  attachment: { network: 'net1', containerID, ifname: 'eth0' },
  node: 'node-a',
  queuedAt: `2026-01-01T00:00:0${containerID.length % 10}.000Z`,
  reason: 'API server did not accept our credentials or TLS: HTTP 401',
  ...extra,
});
const mode = (path: string): number => statSync(path).mode & 0o777;

void describe('enqueueDel', () => {
  void it('makes a 0700 directory and 0600 entries holding the whole call', () => {
    const dir = freshDir();
    const name = enqueueDel(dir, entry('c1', { podUID: 'uid-1' }));
    assert.equal(mode(dir), 0o700);
    assert.equal(mode(join(dir, name)), 0o600);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, name), 'utf8')), entry('c1', { podUID: 'uid-1' }));
  });
  void it('a directory under /proc fails at once (ENOENT), never a recursive mkdir that spins', () => {
    assert.throws(() => enqueueDel('/proc/nope/del-queue', entry('c1')), { code: 'ENOENT' });
  });
  void it('tightens an existing directory that others could read', () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    enqueueDel(dir, entry('c1'));
    assert.equal(mode(dir), 0o700);
  });
  void it('leaves no temporary file, and ignores a crashed writer’s', () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'));
    writeFileSync(join(dir, `.${queuedFileName(entry('c2').attachment)}.99.tmp`), '{"attach');
    assert.deepEqual(queuedFiles(dir), [queuedFileName(entry('c1').attachment)]);
    assert.equal(readdirSync(dir).filter((f) => f.endsWith('.tmp')).length, 1, 'only the crashed one');
  });
  void it('one entry per attachment: a repeated DEL replaces it', () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1', { reason: 'first' }));
    enqueueDel(dir, entry('c1', { reason: 'second' }));
    const files = queuedFiles(dir);
    assert.equal(files.length, 1);
    assert.equal((JSON.parse(readFileSync(join(dir, files[0] ?? ''), 'utf8')) as QueuedDel).reason, 'second');
  });
  void it('bounded: past `max` a new entry is refused, an existing one still rewritten', () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'), 2);
    enqueueDel(dir, entry('c2'), 2);
    assert.throws(
      () => enqueueDel(dir, entry('c3'), 2),
      (e: unknown) => isDeletionQueueFullError(e) && /is full \(2 entries\)/.test((e as Error).message),
    );
    enqueueDel(dir, entry('c2', { reason: 'again' }), 2);
    assert.equal(queuedFiles(dir).length, 2);
  });
});

void describe('queueableDelFailure', () => {
  const cases: [string, unknown, boolean][] = [
    // credential refused (401), RBAC (403), TLS: 105
    [
      '105',
      new CniError(CniCode.authFailed, 'API server did not accept our credentials or TLS', 'HTTP 401'),
      true,
    ],
    // API server unreachable, kubeconfig unreadable: 11
    ['11', new CniError(CniCode.tryAgainLater, 'datastore unreachable', 'ECONNREFUSED'), true],
    // the time budget
    ['timeout', Object.assign(new Error('The operation timed out'), { name: 'TimeoutError' }), true],
    // a write the API server rejected: replaying fails the same way
    ['106', new CniError(CniCode.apiRejected, 'API server rejected the request'), false],
    // an admission policy's denial
    ['107', new CniError(CniCode.admissionDenied, 'admission policy denied the write'), false],
    // bad input
    ['7', new CniError(CniCode.invalidConfig, 'node name mismatch'), false],
    // anything else
    ['plain', new Error('boom'), false],
  ];
  for (const [name, e, queued] of cases)
    void it(`${name}: ${queued ? 'queued' : 'fails as it is'}`, () =>
      assert.equal(queueableDelFailure(e) !== undefined, queued));
});

void describe('replayDeletionQueue', () => {
  /** A service's DEL over a map of handles (released answers 0 for an unknown handle). */
  const service = (held: Set<string>, failing = new Set<string>()) => {
    const calls: DelCall[] = [];
    return {
      calls,
      del: (call: DelCall) => {
        calls.push(call);
        const h = `${call.attachment.network}.${call.attachment.containerID}.${call.attachment.ifname}`;
        if (failing.has(h)) return Promise.reject(new Error('HTTP 503'));
        return Promise.resolve({ released: held.delete(h) ? 1 : 0 });
      },
    };
  };
  void it('releases each entry by handle for this node, oldest first, and removes its file', async () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c-22', { podUID: 'uid-2', node: 'other' }));
    enqueueDel(dir, entry('c1'));
    const held = new Set(['net1.c1.eth0', 'net1.c-22.eth0']);
    const s = service(held);
    const results = await replayDeletionQueue({ dir, node: 'node-a', del: s.del });
    assert.deepEqual(s.calls, [
      { attachment: { network: 'net1', containerID: 'c1', ifname: 'eth0' }, node: 'node-a' },
      {
        attachment: { network: 'net1', containerID: 'c-22', ifname: 'eth0' },
        node: 'node-a',
        podUID: 'uid-2',
      },
    ]);
    assert.deepEqual(
      results.map((r) => ('released' in r ? r.released : r.error)),
      [1, 1],
    );
    assert.equal(held.size, 0);
    assert.deepEqual(queuedFiles(dir), []);
  });
  void it('idempotent: an entry already released answers 0 and still goes', async () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'));
    const results = await replayDeletionQueue({ dir, node: 'node-a', del: service(new Set()).del });
    assert.deepEqual(
      results.map((r) => ('released' in r ? r.released : r.error)),
      [0],
    );
    assert.deepEqual(queuedFiles(dir), []);
  });
  void it('a failed release keeps its file for the next pass; others go on', async () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'));
    enqueueDel(dir, entry('c22'));
    const s = service(new Set(['net1.c22.eth0']), new Set(['net1.c1.eth0']));
    const results = await replayDeletionQueue({ dir, node: 'node-a', del: s.del });
    assert.deepEqual(
      results.map((r) => ('released' in r ? r.released : r.error)),
      ['HTTP 503', 1],
    );
    assert.deepEqual(queuedFiles(dir), [queuedFileName(entry('c1').attachment)]);
  });
  void it('a file that is no entry is reported and kept, never released', async () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'));
    writeFileSync(join(dir, 'junk.json'), '{"attachment": {}}');
    const s = service(new Set());
    const results = await replayDeletionQueue({ dir, node: 'node-a', del: s.del });
    assert.equal(s.calls.length, 1);
    assert.match(
      String(results.find((r) => r.file === 'junk.json' && 'error' in r && r.error)?.file),
      /junk/,
    );
    assert.deepEqual(queuedFiles(dir), ['junk.json']);
  });
  void it('no directory: nothing to replay', async () => {
    assert.deepEqual(
      await replayDeletionQueue({ dir: freshDir(), node: 'node-a', del: service(new Set()).del }),
      [],
    );
  });
});

void describe('readDeletionQueue', () => {
  void it('each file parsed, oldest first; a file that is no entry returned with why, never thrown', () => {
    const dir = freshDir();
    const c22 = enqueueDel(dir, entry('c22', { podUID: 'uid-2' }));
    const c1 = enqueueDel(dir, entry('c1'));
    writeFileSync(join(dir, 'garbled.json'), '{"attach');
    writeFileSync(join(dir, 'partial.json'), '{"attachment": {"network": "net1"}}');
    // core checks the attachment and node only: no queuedAt sorts first, and does not throw
    writeFileSync(
      join(dir, 'undated.json'),
      JSON.stringify({ attachment: { network: 'n', containerID: 'c', ifname: 'e' }, node: 'node-a' }),
    );
    mkdirSync(join(dir, 'adir.json'));
    const before = readdirSync(dir).sort();
    const reads = readDeletionQueue(dir);
    assert.deepEqual(readdirSync(dir).sort(), before, 'writes nothing');
    const dated = reads.filter((r) => 'entry' in r && r.entry.queuedAt !== undefined);
    assert.deepEqual(dated, [
      { file: c1, entry: entry('c1') },
      { file: c22, entry: entry('c22', { podUID: 'uid-2' }) },
    ]);
    assert.equal(reads.at(-1)?.file, c22);
    const errors = Object.fromEntries(reads.flatMap((r) => ('error' in r ? [[r.file, r.error]] : [])));
    assert.deepEqual(Object.keys(errors).sort(), ['adir.json', 'garbled.json', 'partial.json']);
    assert.match(errors['garbled.json'] ?? '', /^unreadable: /);
    assert.match(errors['adir.json'] ?? '', /^unreadable: .*EISDIR/);
    assert.match(errors['partial.json'] ?? '', /^not a queued DEL/);
  });
  void it('no directory: none', () => assert.deepEqual(readDeletionQueue(freshDir()), []));
  void it('the replay goes past an entry without queuedAt', async () => {
    const dir = freshDir();
    enqueueDel(dir, entry('c1'));
    writeFileSync(
      join(dir, 'undated.json'),
      JSON.stringify({ attachment: { network: 'net1', containerID: 'c9', ifname: 'eth0' }, node: 'node-a' }),
    );
    const results = await replayDeletionQueue({
      dir,
      node: 'node-a',
      del: () => Promise.resolve({ released: 1 }),
    });
    assert.deepEqual(
      results.map((r) => r.file),
      ['undated.json', queuedFileName(entry('c1').attachment)],
    );
  });
});

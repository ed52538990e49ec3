// What ipamctl check says about a node's deletion queue (cli/audit/queue-checks.ts), through the
// whole audit on the memory store with a real queue written by core: each entry a queued-del
// finding (information), a file that is no entry a problem, and the leak a queued DEL explains
// says so while the other leak does not.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { allocateOrdinal, MemoryDatastore, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { enqueueDel } from 'blockipam/core/cni';
import type { QueuedDel } from 'blockipam/core/cni';
import { runAudit } from '../../cli/audit/audit.ts';
import { buildReport } from '../../cli/audit/report.ts';
import { printSummary } from '../../cli/audit/summary.ts';
import { MAIN, SHAPES_T0 } from '../core/block-shapes.ts';

const root = mkdtempSync(join(tmpdir(), 'ipamctl-delq-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** node-1's block: .5 held by ns/web (queued DEL), .6 by ns/api (no DEL queued); both pods gone. */
function block(): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr('10.244.0.0/26'), pool: 'main', node: 'node-1', nowMs: SHAPES_T0 });
  for (const [ordinal, name] of [
    [5, 'web'],
    [6, 'api'],
  ] as const)
    b = allocateOrdinal(
      b,
      ordinal,
      { handle: `net1.c-${name}.eth0`, node: 'node-1', namespace: 'ns', pod: name, podUID: `uid-${name}` },
      SHAPES_T0,
    )!.block;
  return b;
}

/** The sequence number of `ordinal` in {@link block}. */
const seq = (ordinal: number): number => block().spec.allocations[ordinal]?.sequence ?? NaN;

const queued = (containerID: string, podUID: string, queuedAt: string): QueuedDel => ({
  attachment: { network: 'net1', containerID, ifname: 'eth0' },
  node: 'node-1',
  podUID,
  queuedAt,
  reason: 'API server did not accept our credentials or TLS: HTTP 401',
});

/** A queue: web's DEL, one of a sandbox holding nothing, and a garbled file. */
function queue(): { dir: string; web: string; gone: string } {
  const dir = mkdtempSync(join(root, 'del-queue-'));
  const web = enqueueDel(dir, queued('c-web', 'uid-web', '2026-12-03T08:10:00.000Z'));
  const gone = enqueueDel(dir, queued('c-gone', 'uid-gone', '2026-12-03T08:05:00.000Z'));
  writeFileSync(join(dir, 'garbled.json'), '{"attachment": {"net');
  return { dir, web, gone };
}

function audit(deletionQueue?: string) {
  const ds = new MemoryDatastore({
    pools: [MAIN],
    blocks: [block()],
    nodes: [{ metadata: { name: 'node-1' } }],
  });
  return runAudit(ds, { nowMs: SHAPES_T0 + 3_600_000, ...(deletionQueue ? { deletionQueue } : {}) });
}

test('each queued DEL is a queued-del finding, a garbled file a problem, and the leak it explains says so', async () => {
  const { dir, web, gone } = queue();
  const result = await audit(dir);
  assert.deepEqual(
    result.problems.map((p) => [p.kind, p.severity]),
    [
      ['leaked-pod-deleted', 'problem'],
      ['leaked-pod-deleted', 'problem'],
      ['queued-del-unreadable', 'problem'],
      ['queued-del', 'info'],
      ['queued-del', 'info'],
    ],
    JSON.stringify(result.problems, null, 1),
  );
  const [webLeak, api, garbled, first, second] = result.problems;
  assert.equal(
    api?.message,
    `10.244.0.6 (IPAMBlock 10-244-0-0-26, handle net1.c-api.eth0, sequence ${seq(6)}) is held by pod ns/api (uid uid-api) on node node-1: the pod no longer exists`,
  );
  assert.equal(
    webLeak?.message,
    `10.244.0.5 (IPAMBlock 10-244-0-0-26, handle net1.c-web.eth0, sequence ${seq(5)}) is held by pod ns/web (uid uid-web) on node node-1: the pod no longer exists; its DEL is queued on this node (${join(dir, web)}, since 2026-12-03T08:10:00.000Z): the agent releases it when it runs`,
  );
  assert.match(
    garbled?.message ?? '',
    new RegExp(`^${escape(join(dir, 'garbled.json'))} is no queued DEL: unreadable: `),
  );
  assert.match(garbled?.hint ?? '', /the agent never replays it.*remove the file/);
  assert.equal(
    first?.message,
    `DEL of net1.c-gone.eth0 (node node-1, pod uid uid-gone) queued at 2026-12-03T08:05:00.000Z in ${join(dir, gone)}, no allocation of it in the snapshot (its replay releases nothing): API server did not accept our credentials or TLS: HTTP 401`,
  );
  assert.equal(
    second?.message,
    `DEL of net1.c-web.eth0 (node node-1, pod uid uid-web) queued at 2026-12-03T08:10:00.000Z in ${join(dir, web)}, holds 10.244.0.5 (IPAMBlock 10-244-0-0-26): API server did not accept our credentials or TLS: HTTP 401`,
  );
  assert.deepEqual(second?.objects, ['Node/node-1']);
  // the leaks stay releasable: a release by hand is what the replay does (it then answers 0)
  assert.deepEqual(result.leaked.map((l) => l.handle).sort(), ['net1.c-api.eth0', 'net1.c-web.eth0']);

  const report = buildReport(result, { server: 's', kubeSystemUID: 'u' });
  assert.equal(report.problemCount, 3, 'queued-del is information');
  const json = JSON.parse(JSON.stringify(report)) as typeof report;
  assert.equal(json.deletionQueue?.dir, dir);
  const [first0, ...entries] = json.deletionQueue?.entries ?? [];
  assert.equal(first0?.file, 'garbled.json');
  assert.match(first0 && 'error' in first0 ? first0.error : '', /^unreadable: /);
  assert.deepEqual(entries, [
    { file: gone, handle: 'net1.c-gone.eth0', ...queued('c-gone', 'uid-gone', '2026-12-03T08:05:00.000Z') },
    { file: web, handle: 'net1.c-web.eth0', ...queued('c-web', 'uid-web', '2026-12-03T08:10:00.000Z') },
  ]);

  let out = '';
  printSummary({ write: (t: string) => (out += t) }, report, 0);
  assert.match(
    out,
    new RegExp(`\\n {2}deletion queue ${escape(dir)}: 2 DEL\\(s\\) queued, 1 file\\(s\\) no queued DEL\\n`),
  );
  assert.match(out, /\nInformation \(2\):\n {2}DELs queued on this node .* \[queued-del\] \(2\):\n/);
});

test('a DEL queued for another pod UID of the handle does not explain the leak', async () => {
  const dir = mkdtempSync(join(root, 'del-queue-'));
  enqueueDel(dir, queued('c-web', 'uid-other', '2026-12-03T08:10:00.000Z'));
  const { problems } = await audit(dir);
  const web = problems.find((p) => p.message.includes('net1.c-web.eth0') && p.kind === 'leaked-pod-deleted');
  assert.doesNotMatch(web?.message ?? '', /queued/);
  assert.match(
    problems.find((p) => p.kind === 'queued-del')?.message ?? '',
    /no allocation of it in the snapshot/,
  );
});

test('no queue read: no queued-del findings and no deletionQueue in the report', async () => {
  const result = await audit();
  assert.deepEqual(
    result.problems.map((p) => p.kind),
    ['leaked-pod-deleted', 'leaked-pod-deleted'],
  );
  assert.equal('deletionQueue' in buildReport(result, { server: 's', kubeSystemUID: 'u' }), false);
});

test('a queue directory that does not exist reads as empty', async () => {
  const result = await audit(join(root, 'never-made'));
  assert.deepEqual(result.deletionQueue, { dir: join(root, 'never-made'), entries: [] });
  assert.equal(result.problems.filter((p) => p.kind.startsWith('queued-del')).length, 0);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The burst bench's launcher and request arithmetic (test/bench/burst-lib.ts): each process gets
 * its stdin and environment and gives back its own stdout, exit code and CPU; the request
 * filters pick what a CNI call causes and nothing of kube-apiserver's own traffic.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BLOCK_UPDATE, cniCode, IPAM_REQUEST, launchBurst, sumOf } from './burst-lib.ts';

describe('launchBurst', () => {
  test('every process gets the stdin and its own environment; exit codes, stdout, CPU come back in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burst-lib-'));
    try {
      // sh reads its script from stdin: it echoes its env and exits with the code it names
      const envs = [0, 3, 0, 7].map((code, i) => ({ ID: `p${i}`, CODE: String(code) }));
      const out = await launchBurst('/bin/sh', envs, 'echo "$ID"; exit "$CODE"\n', dir);
      assert.deepEqual(
        out.runs.map((r) => [r.code, r.stdout.trim()]),
        [
          [0, 'p0'],
          [3, 'p1'],
          [0, 'p2'],
          [7, 'p3'],
        ],
      );
      for (const r of out.runs) {
        assert.ok(r.cpuMs >= 0 && r.exitMs <= out.wallMs, JSON.stringify(r));
      }
      assert.equal(out.wallMs, Math.max(...out.runs.map((r) => r.exitMs)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('request filters', () => {
  const counted = new Map([
    ['ipam.blockipam.io/ipamblocks PUT 200', 3],
    ['ipam.blockipam.io/ipamblocks PUT 409', 1],
    ['ipam.blockipam.io/ipamblocks LIST 200', 5],
    ['ipam.blockipam.io/ipamblocks WATCH 200', 2],
    ['/namespaces GET 200', 4],
    ['/endpoints GET 200', 9], // kube-apiserver's endpoint reconciler
    ['coordination.k8s.io/leases PUT 200', 6], // kube-apiserver's identity lease
    ['/ GET 200', 8], // /metrics
  ]);
  const table: [string, RegExp, number][] = [
    // every block PUT, conflicts included
    ['block UPDATEs', BLOCK_UPDATE, 4],
    // blockipam's kinds and the core kinds a call reads; no WATCH, no apiserver traffic
    ['requests of a CNI call', IPAM_REQUEST, 3 + 1 + 5 + 4],
  ];
  for (const [what, re, want] of table) test(what, () => assert.equal(sumOf(counted, re), want));
});

describe('cniCode', () => {
  const table: [string, string, string][] = [
    // the CNI error document's code and message
    [
      'error document',
      '{"cniVersion":"1.1.0","code":11,"msg":"try again later"}',
      'CNI 11 (try again later)',
    ],
    // no document: the exit code
    ['not JSON', 'Segmentation fault', 'exit 139'],
  ];
  for (const [what, stdout, want] of table)
    test(what, () => assert.equal(cniCode({ code: 139, cpuMs: 0, exitMs: 0, stdout }), want));
});

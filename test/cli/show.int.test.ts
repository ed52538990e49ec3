// ipamctl show against the real API server: pool utilisation numbers (table and JSON), per
// block and per node (borrowed addresses included), and address look-up.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { rfc3339 } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { cleanClusterHooks, ipamctl, uniqueNamespace, seedP4 } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-show');
let ds: KubeDatastore;

describe('ipamctl show (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1', 'n2'], onReady: (d) => (ds = d) });

  test('show: pool capacity / used / free / blocks, as a table and as JSON (counts as decimal strings)', async () => {
    await seedP4(ds, ns);
    const table = await ipamctl(['show']);
    assert.equal(table.code, 0, table.stderr);
    // 4 blocks of /26 in a /24, each with 64 − 3 reserved = 61 assignable addresses.
    assert.match(
      table.stdout,
      /^POOL +CIDR +BLOCK SIZE +CAPACITY +USED +FREE +BLOCKS +DISABLED +EXHAUSTS\np4 +10\.244\.0\.0\/24 +26 +244 +2 +242 +2 +false +unknown \(history < 10 min\)\n$/,
    );
    const json = JSON.parse((await ipamctl(['show', '-o', 'json'])).stdout) as unknown;
    assert.deepEqual(json, [
      {
        name: 'p4',
        cidr: '10.244.0.0/24',
        blockSize: 26,
        disabled: false,
        capacity: '244',
        used: '2',
        free: '242',
        blocks: 2,
        forecast: { kind: 'unknown', reason: 'short', spanMs: 0 },
        exhausts: 'unknown (history < 10 min)',
      },
    ]);
  });

  // The forecast from the samples the controller keeps in status (p4: 2 allocated now, 242 free).
  const hour = 3_600_000;
  const forecasts: [string, { ageMs: number; allocated: number }, RegExp][] = [
    [
      'none 2 h ago: 1 an hour, 242 h ≈ 10.1 days',
      { ageMs: 2 * hour, allocated: 0 },
      /in 10\.1 days \(1\.0\/h\)/,
    ],
    ['3 allocated 2 h ago: falling', { ageMs: 2 * hour, allocated: 3 }, /never at the current rate/],
    // the controller has not sampled for a day (down): no rate from a day-old baseline, and why
    [
      'a day-old sample: stale',
      { ageMs: 24 * hour, allocated: 0 },
      /unknown \(no sample for 24\.0 hours: is the controller running\?\)/,
    ],
  ];
  for (const [what, sample, exhausts] of forecasts)
    test(`show: when the pool runs out at the recent rate (${what})`, async () => {
      await seedP4(ds, ns);
      await ds.pools.updateStatus({
        ...(await ds.pools.get('p4'))!,
        status: {
          allocationSamples: [{ time: rfc3339(Date.now() - sample.ageMs), allocated: sample.allocated }],
        },
      });
      const out = await ipamctl(['show']);
      assert.equal(out.code, 0, out.stderr);
      assert.match(
        out.stdout,
        new RegExp(`\\np4 +10\\.244\\.0\\.0\\/24 +26 +244 +2 +242 +2 +false +${exhausts.source}\\n$`),
      );
    });

  test('show --blocks and --node (borrowed addresses included)', async () => {
    await seedP4(ds, ns);
    const blocks = parse((await ipamctl(['show', '--blocks', '-o', 'yaml'])).stdout) as {
      name: string;
      affinity: string;
      used: number;
      free: number;
    }[];
    assert.deepEqual(
      blocks.map((b) => [b.name, b.affinity, b.used, b.free]),
      [
        ['10-244-0-0-26', 'n1', 2, 59],
        ['10-244-0-64-26', 'n2', 0, 61],
      ],
    );
    const n2 = JSON.parse((await ipamctl(['show', '--node', 'n2', '-o', 'json'])).stdout) as {
      blocks: { name: string }[];
      allocations: { address: string; borrowed: boolean }[];
    };
    assert.deepEqual(
      n2.blocks.map((b) => b.name),
      ['10-244-0-64-26'],
    );
    assert.deepEqual(n2.allocations, [
      {
        address: '10.244.0.6',
        block: '10-244-0-0-26',
        borrowed: true,
        handle: 'net.b.eth0',
        namespace: ns,
        pod: 'b',
        podUID: 'uid-b',
        sequence: 1002,
      },
    ]);
  });

  test('show --ip: owner of an allocated address; free and reserved addresses say so', async () => {
    await seedP4(ds, ns);
    const owner = await ipamctl(['show', '--ip', '10.244.0.5']);
    assert.equal(owner.code, 0);
    for (const line of [
      /HANDLE +net\.a\.eth0/,
      new RegExp(`POD +${ns}/a`),
      /POD UID +uid-a/,
      /NODE +n1/,
      /SEQUENCE +1001/,
      /BLOCK +10-244-0-0-26 \(affinity n1\)/,
    ])
      assert.match(owner.stdout, line);
    assert.match((await ipamctl(['show', '--ip', '10.244.0.9'])).stdout, /STATUS +free in 10-244-0-0-26/);
    assert.match((await ipamctl(['show', '--ip', '10.244.0.1'])).stdout, /STATUS +reserved in 10-244-0-0-26/);
    assert.match((await ipamctl(['show', '--ip', '10.9.9.9'])).stdout, /STATUS +not in any IPAMBlock/);
  });
});

// ipamctl pool create against the real API server: concurrent creations of overlapping pools
// leave at most one pool (fresh tester: 3 parallel creates of one CIDR made 3 pools), a refused
// creation leaves nothing behind, and the surviving pool is enabled unless --disabled.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { cleanClusterHooks, ipamctl, uniqueNamespace } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-pool-create');
let ds: KubeDatastore;

/** Runs `pool create` for each [name, cidr] at once; returns the exit codes by name. */
async function createTogether(pools: readonly [string, string][]): Promise<Map<string, number>> {
  const runs = await Promise.all(
    pools.map(([name, cidr]) => ipamctl(['pool', 'create', name, '--cidr', cidr])),
  );
  for (const run of runs) assert.ok(run.code === 0 || run.code === 2, `exit ${run.code}: ${run.stderr}`);
  for (const run of runs.filter((r) => r.code === 2)) assert.match(run.stderr, /overlaps IPPool/);
  return new Map(pools.map(([name], i) => [name, runs[i]?.code ?? -1]));
}

describe('ipamctl pool create: overlap refused atomically (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: [], onReady: (d) => (ds = d) });

  // 5 rounds: each a fresh race; one surviving pool at most every time.
  for (const round of [1, 2, 3, 4, 5])
    test(`3 concurrent creates of one CIDR: at most one pool, and it is the one that exited 0 (round ${round})`, async (t) => {
      const codes = await createTogether([
        ['race-a', '10.77.0.0/16'],
        ['race-b', '10.77.0.0/16'],
        ['race-c', '10.77.0.0/16'],
      ]);
      const pools = await ds.pools.list();
      assert.equal([...codes.values()].filter((c) => c === 0).length, pools.length);
      t.diagnostic(`created: ${pools.map((p) => p.metadata.name).join(', ') || 'none'}`);
      assert.ok(pools.length <= 1, `pools: ${pools.map((p) => p.metadata.name).join(', ')}`);
      assert.deepEqual(
        pools.map((p) => p.metadata.name),
        [...codes].filter(([, code]) => code === 0).map(([name]) => name),
      );
      for (const pool of pools) assert.notEqual(pool.spec.disabled, true, 'enabled, as asked');
    });

  test('concurrent creates of overlapping, unequal CIDRs: never two overlapping pools', async () => {
    const codes = await createTogether([
      ['wide', '10.78.0.0/16'],
      ['narrow', '10.78.4.0/24'],
      ['apart', '10.79.0.0/16'],
    ]);
    const names = (await ds.pools.list()).map((p) => p.metadata.name).sort();
    assert.ok(!(names.includes('wide') && names.includes('narrow')), names.join(', '));
    assert.ok(names.includes('apart'), 'a pool overlapping nothing is created');
    assert.equal(codes.get('apart'), 0);
  });

  test('--disabled stays disabled after the check', async () => {
    const run = await ipamctl(['pool', 'create', 'off', '--cidr', '10.80.0.0/16', '--disabled']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal((await ds.pools.get('off'))?.spec.disabled, true);
  });

  // the CRD wants the canonical form (lower case, shortest IPv6); the API server refused "FD00::/64"
  const canonical: [string, string][] = [
    ['FD00::/64', 'fd00::/64'],
    ['fd00:0:0::/64', 'fd00::/64'],
  ];
  for (const [typed, stored] of canonical)
    test(`--cidr ${typed} is created as ${stored}`, async () => {
      const run = await ipamctl(['pool', 'create', 'upper-v6', '--cidr', typed]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`IPPool upper-v6 \\(${stored.replaceAll('/', '\\/')}\\) created`));
      assert.equal((await ds.pools.get('upper-v6'))?.spec.cidr, stored);
      await ds.pools.delete('upper-v6');
    });
});

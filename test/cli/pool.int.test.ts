// ipamctl pool create / list / disable / enable / delete against the real API server: pool
// validation against other pools and blocks, guarded deletion by pool label; concurrent creations
// of overlapping pools leave at most one pool (fresh tester: 3 parallel creates of one CIDR made 3
// pools), a refused creation leaves nothing behind, and the surviving pool is enabled unless
// --disabled.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { blockObject, cleanClusterHooks, ipamctl, poolObject, uniqueNamespace, seedP4 } from './cluster.ts';

const ns = uniqueNamespace('ipamctl-pool');
let ds: KubeDatastore;

describe('ipamctl pool (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1', 'n2'], onReady: (d) => (ds = d) });

  test('pool create validates against other pools and blocks of another size; list shows state', async () => {
    await seedP4(ds, ns);
    const overlap = await ipamctl([
      'pool',
      'create',
      'p4b',
      '--cidr',
      '10.244.0.128/25',
      '--block-size',
      '27',
    ]);
    assert.equal(overlap.code, 2);
    assert.match(overlap.stderr, /refused: IPPool "p4b" \(10\.244\.0\.128\/25\) overlaps IPPool "p4"/);
    await ds.blocks.create(blockObject({ cidr: '10.251.0.0/26', pool: 'old', affinity: 'n1' }));
    const sizes = await ipamctl(['pool', 'create', 'p6', '--cidr', '10.251.0.0/20', '--block-size', '28']);
    assert.equal(sizes.code, 2);
    assert.match(sizes.stderr, /overlaps IPAMBlock "10-251-0-0-26" of block size 26/);
    assert.equal(await ds.pools.get('p6'), undefined);
    const made = await ipamctl([
      'pool',
      'create',
      'tenant',
      '--cidr',
      '10.250.0.0/20',
      '--block-size',
      '28',
      '--namespace-selector',
      'team=a',
      '--mode',
      'Manual',
    ]);
    assert.equal(made.code, 0, made.stderr);
    assert.deepEqual((await ds.pools.get('tenant'))?.spec, {
      cidr: '10.250.0.0/20',
      blockSize: 28,
      assignmentMode: 'Manual',
      namespaceSelector: { matchLabels: { team: 'a' } },
      disabled: false,
      podCIDRBlocks: false,
    });
    const list = await ipamctl(['pool', 'list']);
    assert.match(
      list.stdout,
      /p4 +10\.244\.0\.0\/24 +26 +Automatic +usable\ntenant +10\.250\.0\.0\/20 +28 +Manual +usable/,
    );
  });

  test('pool disable / enable toggle spec.disabled', async () => {
    await seedP4(ds, ns);
    assert.equal((await ipamctl(['pool', 'disable', 'p4'])).code, 0);
    assert.equal((await ds.pools.get('p4'))?.spec.disabled, true);
    assert.match((await ipamctl(['pool', 'list'])).stdout, /p4 .* disabled/);
    assert.equal((await ipamctl(['pool', 'enable', 'p4'])).code, 0);
    assert.equal((await ds.pools.get('p4'))?.spec.disabled, false);
    assert.equal((await ipamctl(['pool', 'disable', 'nope'])).code, 2);
  });

  test('pool delete refuses while allocations exist; needs --yes; removes the empty blocks', async () => {
    await seedP4(ds, ns);
    const refused = await ipamctl(['pool', 'delete', 'p4', '--yes']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /refused: IPPool p4 still has 2 allocation\(s\) in 10-244-0-0-26/);
    assert.ok(await ds.pools.get('p4'));
    await ds.blocks.delete('10-244-0-0-26');
    const dry = await ipamctl(['pool', 'delete', 'p4']);
    assert.equal(dry.code, 3);
    assert.match(
      dry.stdout,
      /Would delete IPPool p4 \(10\.244\.0\.0\/24\) after disabling it and its 1 empty block\(s\): 10-244-0-64-26/,
    );
    assert.equal((await ds.pools.get('p4'))?.spec.disabled, false);
    const done = await ipamctl(['pool', 'delete', 'p4', '--yes']);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(await ds.pools.get('p4'), undefined);
    assert.deepEqual(await ds.blocks.list(), []);
  });

  test('pool delete selects blocks by pool label: a shadowed overlapping pool is deleted without touching the other pool’s blocks', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    await ds.blocks.create(blockObject({ cidr: '10.244.8.0/26', pool: 'p4', affinity: 'n1' }));
    // Made by kubectl past validation, inside p4: shadowed, never used.
    await ds.pools.create(poolObject('p4-inner', '10.244.8.0/24'));
    const dry = await ipamctl(['pool', 'delete', 'p4-inner']);
    assert.equal(dry.code, 3, dry.stderr);
    assert.match(dry.stdout, /Would delete IPPool p4-inner .* and its 0 empty block\(s\)\./);
    const done = await ipamctl(['pool', 'delete', 'p4-inner', '--yes']);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(await ds.pools.get('p4-inner'), undefined);
    assert.ok(await ds.blocks.get('10-244-8-0-26'), "p4's empty block is kept");
    // Also while p4 holds allocations inside p4-inner's range.
    await ds.pools.create(poolObject('p4-inner', '10.244.8.0/24'));
    const allocations = [
      { ordinal: 5, handle: 'net.a.eth0', node: 'n1', namespace: ns, pod: 'a', podUID: 'u' },
    ];
    await ds.blocks.create(blockObject({ cidr: '10.244.8.64/26', pool: 'p4', affinity: 'n1', allocations }));
    const again = await ipamctl(['pool', 'delete', 'p4-inner', '--yes']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await ds.pools.get('p4-inner'), undefined);
    assert.deepEqual(
      (await ds.blocks.list()).map((b) => b.metadata.name),
      ['10-244-8-0-26', '10-244-8-64-26'],
    );
    assert.ok(await ds.pools.get('p4'));
  });

  test('pool create of an existing name: a clear refusal, nothing changed', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    const out = await ipamctl(['pool', 'create', 'p4', '--cidr', '10.99.0.0/16']);
    assert.equal(out.code, 2);
    assert.match(
      out.stderr,
      /^ipamctl: IPPool p4 already exists \(10\.244\.0\.0\/16\); nothing was changed\n$/,
    );
    assert.equal((await ds.pools.get('p4'))?.spec.cidr, '10.244.0.0/16');
  });
});

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
  cleanClusterHooks({ nodes: [], onReady: (d) => (ds = d) });

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

  test('--podcidr-blocks --disabled: a podCIDR pool, disabled, as adopt plan suggests it', async () => {
    const args = ['--cidr', '10.81.0.0/16', '--block-size', '24', '--podcidr-blocks', '--disabled'];
    const run = await ipamctl(['pool', 'create', 'kind', ...args]);
    assert.equal(run.code, 0, run.stderr);
    const spec = (await ds.pools.get('kind'))?.spec;
    assert.deepEqual([spec?.podCIDRBlocks, spec?.disabled, spec?.blockSize], [true, true, 24]);
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

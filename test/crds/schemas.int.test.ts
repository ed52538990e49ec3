// The CRDs on the real API server: bad objects are rejected with 422 naming the field; defaults,
// printer columns, short names and the category work.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isInvalid, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock, IPAMConfigObject, IPPool, IPReservation } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubectl } from '../helpers/control-plane.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

let ds: KubeDatastore;
before(async () => {
  ds = adminDatastore();
  await wipeBlockipam(ds);
});
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
});

const pool = (name: string, spec: Record<string, unknown>): IPPool => ({
  metadata: { name },
  spec: spec as unknown as IPPool['spec'],
});

/** Asserts the promise fails with 422 and a message matching every pattern. */
async function rejected(promise: Promise<unknown>, ...patterns: RegExp[]): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isInvalid(error), String(error));
    assert.equal(error.status, 422);
    for (const p of patterns) assert.match(error.message, p);
    return true;
  });
}

describe('IPPool schema', () => {
  const cases: [string, IPPool, RegExp[]][] = [
    ['cidr that is not a CIDR', pool('bad-1', { cidr: '10.0.0.0' }), [/spec\.cidr/, /must be a CIDR/]],
    ['cidr with host bits', pool('bad-2', { cidr: '10.0.0.1/16' }), [/spec\.cidr/, /strictly masked/]],
    ['non-canonical IPv6', pool('bad-3', { cidr: 'FD00::/64', blockSize: 122 }), [/spec\.cidr/, /canonical/]],
    [
      'IPv4 block size /32 (ptp cannot use it)',
      pool('bad-4', { cidr: '10.0.0.0/16', blockSize: 32 }),
      [/spec\.blockSize/, /20-30 for an IPv4/],
    ],
    ['IPv4 block size /31', pool('bad-5', { cidr: '10.0.0.0/16', blockSize: 31 }), [/spec\.blockSize/]],
    ['IPv6 block size /128', pool('bad-6', { cidr: 'fd00::/64', blockSize: 128 }), [/spec\.blockSize/]],
    [
      'IPv6 block size /26',
      pool('bad-7', { cidr: 'fd00::/64', blockSize: 26 }),
      [/spec\.blockSize/, /116-126 for an IPv6/],
    ],
    ['block size below 20', pool('bad-8', { cidr: '10.0.0.0/8', blockSize: 19 }), [/spec\.blockSize/]],
    [
      'pool smaller than its default block',
      pool('bad-9', { cidr: '10.0.0.0/28' }),
      [/spec\.cidr/, /at least one block/],
    ],
    ['link-local range', pool('bad-10', { cidr: '169.254.0.0/16' }), [/spec\.cidr/, /link-local/]],
    ['loopback range', pool('bad-10l', { cidr: '127.0.0.0/16' }), [/spec\.cidr/, /loopback/]],
    ['IPv4 multicast range', pool('bad-10m', { cidr: '224.0.0.0/16' }), [/spec\.cidr/, /multicast/]],
    ['IPv6 multicast range', pool('bad-10n', { cidr: 'ff02::/64' }), [/spec\.cidr/, /multicast/]],
    ['a range holding loopback', pool('bad-10o', { cidr: '96.0.0.0/3' }), [/spec\.cidr/, /loopback/]],
    [
      'unknown assignmentMode',
      pool('bad-11', { cidr: '10.0.0.0/16', assignmentMode: 'Sometimes' }),
      [/spec\.assignmentMode/],
    ],
    [
      'selector operator In without values',
      pool('bad-12', {
        cidr: '10.0.0.0/16',
        nodeSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] },
      }),
      [/spec\.nodeSelector\.matchExpressions\[0\]/],
    ],
    [
      'name longer than a label value',
      pool('p'.repeat(64), { cidr: '10.0.0.0/16' }),
      [/metadata\.name/, /63 characters/],
    ],
    [
      'a matchLabels key that is no label key',
      pool('bad-13', { cidr: '10.0.0.0/16', nodeSelector: { matchLabels: { 'bad key!': 'x' } } }),
      [/spec\.nodeSelector\.matchLabels/, /label keys/],
    ],
    [
      'a matchLabels value that is no label value',
      pool('bad-14', { cidr: '10.0.0.0/16', namespaceSelector: { matchLabels: { team: 'a b' } } }),
      [/spec\.namespaceSelector\.matchLabels/],
    ],
    [
      'a matchExpressions key that is no label key',
      pool('bad-15', {
        cidr: '10.0.0.0/16',
        nodeSelector: { matchExpressions: [{ key: '-x', operator: 'Exists' }] },
      }),
      [/spec\.nodeSelector\.matchExpressions\[0\]\.key/],
    ],
  ];
  for (const [title, object, patterns] of cases)
    it(`rejects ${title}`, () => rejected(ds.pools.create(object), ...patterns));

  it('accepts selectors with prefixed keys and empty values', async () => {
    const p = pool('selectors', {
      cidr: '10.73.0.0/16',
      nodeSelector: {
        matchLabels: { 'topology.kubernetes.io/zone': 'eu-1a', 'node.example.com/pool': '' },
        matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }],
      },
    });
    await ds.pools.create(p);
    await ds.pools.delete('selectors');
  });
  it('accepts a valid pool and applies defaults', async () => {
    const created = await ds.pools.create(pool('good', { cidr: '10.70.0.0/16' }));
    assert.equal(created.spec.assignmentMode, 'Automatic');
    assert.equal(created.spec.disabled, false);
  });
  it('cidr and blockSize are immutable', async () => {
    const good = (await ds.pools.get('good'))!;
    await rejected(
      ds.pools.update({ ...good, spec: { ...good.spec, cidr: '10.71.0.0/16' } }),
      /spec\.cidr/,
      /immutable/,
    );
    await rejected(
      ds.pools.update({ ...good, spec: { ...good.spec, blockSize: 27 } }),
      /spec\.blockSize/,
      /immutable/,
    );
    const sized = await ds.pools.create(pool('sized', { cidr: '10.72.0.0/16', blockSize: 26 }));
    await rejected(
      ds.pools.update({ ...sized, spec: { ...sized.spec, blockSize: 27 } }),
      /spec\.blockSize/,
      /immutable/,
    );
    const updated = await ds.pools.update({ ...sized, spec: { ...sized.spec, disabled: true } });
    assert.equal(updated.spec.disabled, true, 'other fields stay mutable');
  });
  it('kubectl get ippools shows CIDR, block size, used and free; short name and category work', async () => {
    const sized = (await ds.pools.get('sized'))!;
    await ds.pools.updateStatus({
      ...sized,
      // BLOCK SIZE reads status.blockSize (the effective size, written by the controller).
      status: {
        blockSize: 26,
        capacity: 1000,
        allocated: 12,
        free: 988,
        blocks: 1,
        state: 'Ready',
        shortNodes: [{ node: 'n1', free: 0, blocks: 1, reason: 'MaxBlocksPerNode' }],
        shortNodeCount: 1,
        allocationSamples: [{ time: '2026-12-03T00:00:00Z', allocated: 10 }],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'OK',
            lastTransitionTime: '2026-12-03T00:00:00Z',
            observedGeneration: sized.metadata.generation ?? 1,
          },
        ],
      },
    });
    const out = kubectl(['get', 'ipp', 'sized']);
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /NAME\s+CIDR\s+BLOCK SIZE\s+USED\s+FREE\s+STATE\s+AGE/);
    assert.match(out.stdout, /sized\s+10\.72\.0\.0\/16\s+26\s+12\s+988\s+Ready/);
    const stored = (await ds.pools.get('sized'))!;
    assert.equal(stored.status?.conditions?.[0]?.observedGeneration, sized.metadata.generation ?? 1);
    await rejected(
      ds.pools.updateStatus({ ...stored, status: { ...stored.status, state: 'Fine' } }),
      /status\.state/,
    );
    await rejected(
      ds.pools.updateStatus({
        ...stored,
        status: { ...stored.status, shortNodes: [{ node: 'n1', free: 0, blocks: 1, reason: 'Tired' }] },
      }),
      /status\.shortNodes\[0\]\.reason/,
    );
    assert.deepEqual(stored.status?.allocationSamples, [{ time: '2026-12-03T00:00:00Z', allocated: 10 }]);
    await rejected(
      ds.pools.updateStatus({
        ...stored,
        status: { ...stored.status, allocationSamples: [{ time: '2026-12-03T00:00:00Z', allocated: -1 }] },
      }),
      /status\.allocationSamples\[0\]\.allocated/,
    );
    await rejected(
      ds.pools.updateStatus({
        ...stored,
        status: {
          ...stored.status,
          allocationSamples: Array.from({ length: 17 }, () => ({
            time: '2026-12-03T00:00:00Z',
            allocated: 1,
          })),
        },
      }),
      /status\.allocationSamples/,
      /17/,
    );
    const all = kubectl(['get', 'blockipam']);
    assert.match(all.stdout, /ippool\.ipam\.blockipam\.io\/sized/);
  });
});

describe('IPAMConfig schema', () => {
  const config = (name: string, spec: Record<string, unknown>): IPAMConfigObject => ({
    metadata: { name },
    spec,
  });
  const cases: [string, IPAMConfigObject, RegExp[]][] = [
    ['a name other than "default"', config('other', {}), [/metadata\.name/, /must be named "default"/]],
    [
      'autoAllocateBlocks false without strictAffinity',
      config('default', { autoAllocateBlocks: false }),
      [/spec\.autoAllocateBlocks/, /requires strictAffinity/],
    ],
    [
      'cooldown longer than the empty-block delay',
      config('default', { ipCooldownSeconds: 600 }),
      [/spec\.emptyBlockReleaseSeconds/, /ipCooldownSeconds/],
    ],
    ['maxBlocksPerNode 0', config('default', { maxBlocksPerNode: 0 }), [/spec\.maxBlocksPerNode/]],
    [
      'a negative minFreeAddressesPerNode',
      config('default', { minFreeAddressesPerNode: -1 }),
      [/spec\.minFreeAddressesPerNode/],
    ],
    [
      'poolNearlyExhaustedPercent 0',
      config('default', { poolNearlyExhaustedPercent: 0 }),
      [/spec\.poolNearlyExhaustedPercent/],
    ],
    [
      'poolNearlyExhaustedPercent above 100',
      config('default', { poolNearlyExhaustedPercent: 101 }),
      [/spec\.poolNearlyExhaustedPercent/],
    ],
  ];
  for (const [title, object, patterns] of cases)
    it(`rejects ${title}`, () => rejected(ds.configs.create(object), ...patterns));
  it('accepts autoAllocateBlocks false with strictAffinity, and fills defaults', async () => {
    const created = await ds.configs.create(
      config('default', { autoAllocateBlocks: false, strictAffinity: true }),
    );
    assert.deepEqual(created.spec, {
      autoAllocateBlocks: false,
      strictAffinity: true,
      maxBlocksPerNode: 20,
      ipCooldownSeconds: 0,
      emptyBlockReleaseSeconds: 300,
      leakGracePeriodSeconds: 900,
      minFreeAddressesPerNode: 16,
      poolNearlyExhaustedPercent: 90,
    });
    await ds.configs.delete('default');
  });
});

describe('IPAMBlock and IPReservation schemas', () => {
  const block = (cidr: string): IPAMBlock =>
    newBlock({ cidr: mustParseCidr(cidr), pool: 'good', node: 'n1', nowMs: Date.now() });
  it('rejects a name not derived from the CIDR', async () => {
    const b = block('10.70.0.0/26');
    await rejected(
      ds.blocks.create({ ...b, metadata: { ...b.metadata, name: '10-70-0-64-26' } }),
      /metadata\.name/,
      /name must be the CIDR/,
    );
  });
  it('rejects a /31 block', async () => {
    const b = block('10.70.0.0/26');
    await rejected(
      ds.blocks.create({
        ...b,
        metadata: { ...b.metadata, name: '10-70-0-0-31' },
        spec: { ...b.spec, cidr: '10.70.0.0/31' },
      }),
      /spec\.cidr/,
      /\/20-\/30/,
    );
  });
  it('rejects a decreasing sequence number', async () => {
    const created = await ds.blocks.create(block('10.70.0.0/26'));
    await rejected(
      ds.blocks.update({ ...created, spec: { ...created.spec, sequence: created.spec.sequence - 1 } }),
      /spec\.sequence/,
      /never decreases/,
    );
  });
  it('rejects allocation keys that are not ordinals, and an empty affinity', async () => {
    const b = block('10.70.0.0/26');
    const a = { handle: 'h', node: 'n1', allocatedAt: '2026-11-29T08:00:00Z', sequence: 1 };
    for (const key of ['abc', '9999', '07'])
      await rejected(
        ds.blocks.create({ ...b, spec: { ...b.spec, allocations: { [key]: a } } }),
        /spec\.allocations/,
        /decimal ordinals/,
      );
    await rejected(ds.blocks.create({ ...b, spec: { ...b.spec, affinity: '' } }), /spec\.affinity/);
  });
  it('rejects a reservation that is not a masked CIDR', async () => {
    const r: IPReservation = {
      metadata: { name: 'r' },
      spec: { reservedCIDRs: ['10.70.0.0/24', '10.70.1.1/24'] },
    };
    await rejected(ds.reservations.create(r), /spec\.reservedCIDRs\[1\]/);
  });
});

/**
 * The agent's pre-claim / release planner (core/allocator/upkeep-plan.ts), pure:
 * table-driven over seeded blocks, pools, settings and a fixed clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocateOrdinal, mustParseCidr, newBlock, snapshotOf } from 'blockipam/core';
import type { IPAMBlock, IPAMConfigSpec, IPPool, IPPoolSpec } from 'blockipam/core';
import { planUpkeep } from 'blockipam/core';

const T0 = Date.parse('2026-12-01T08:00:00Z');
const HOUR = 3_600_000;

const pool = (name: string, spec: IPPoolSpec): IPPool => ({
  metadata: { name, creationTimestamp: '2026-11-01T00:00:00Z' },
  spec,
});
const V4 = pool('v4', { cidr: '10.1.0.0/16' });
const V6 = pool('v6', { cidr: 'fd00:1::/64' });

/** A block of `p` affine to n1, claimed at `claimedAt`, with `used` allocations. */
function block(p: IPPool, cidr: string, used: number, claimedAt = T0 - HOUR): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool: p.metadata.name, node: 'n1', nowMs: claimedAt });
  for (let ordinal = 1; used > 0; ordinal++) {
    const next = allocateOrdinal(b, ordinal, { handle: `h${ordinal}`, node: 'n1' }, claimedAt);
    if (!next) continue;
    b = next.block;
    used -= 1;
  }
  return b;
}

function plan(affine: IPAMBlock[], config: IPAMConfigSpec = {}, pools = [V4], labels = {}) {
  const snapshot = snapshotOf(
    { config: { metadata: { name: 'default' }, spec: config }, pools, reservations: [] },
    T0,
  );
  return planUpkeep({ node: 'n1', nodeLabels: labels, snapshot, affine, nowMs: T0 });
}
const names = (xs: readonly { metadata: { name: string } }[]): string[] => xs.map((x) => x.metadata.name);

describe('pre-claim', () => {
  test('no block yet: claims one per eligible pool, both families', () => {
    const p = plan([], {}, [V4, V6]);
    assert.deepEqual(names(p.claims), ['v4', 'v6']);
    assert.deepEqual(
      p.headroom.map((h) => [h.pool, h.free, h.blocks]),
      [
        ['v4', 0, 0],
        ['v6', 0, 0],
      ],
    );
  });

  test('free at the watermark: nothing; one below: claim', () => {
    // a /26 has 61 assignable ordinals (network, gateway, broadcast reserved)
    assert.deepEqual(names(plan([block(V4, '10.1.0.0/26', 45)]).claims), []);
    assert.deepEqual(names(plan([block(V4, '10.1.0.0/26', 46)]).claims), ['v4']);
    assert.equal(plan([block(V4, '10.1.0.0/26', 46)]).headroom[0]?.free, 15);
  });

  test('watermark 0 or autoAllocateBlocks false: never claims', () => {
    assert.deepEqual(plan([], { minFreeAddressesPerNode: 0 }).claims, []);
    assert.deepEqual(plan([], { autoAllocateBlocks: false, strictAffinity: true }).claims, []);
  });

  test('at maxBlocksPerNode: no claim, the pool is reported at the limit', () => {
    const full = [block(V4, '10.1.0.0/26', 61), block(V4, '10.1.0.64/26', 61)];
    const p = plan(full, { maxBlocksPerNode: 2 });
    assert.deepEqual(p.claims, []);
    assert.deepEqual(p.atLimit, ['v4']);
  });

  test('maxBlocksPerNode counts blocks of the family across pools, and claims planned in the pass', () => {
    const other = pool('v4b', { cidr: '10.2.0.0/16' });
    const p = plan([block(V4, '10.1.0.0/26', 61)], { maxBlocksPerNode: 2 }, [V4, other]);
    assert.deepEqual(names(p.claims), ['v4']);
    assert.deepEqual(p.atLimit, ['v4b']);
  });

  test('a frozen block (core/block/frozen.ts) is no room and does not count against maxBlocksPerNode', () => {
    // n1's only block has 61 free ordinals but a finalizer: free 0, so it claims one more
    const frozen = block(V4, '10.1.0.0/26', 0);
    frozen.metadata.finalizers = ['example.com/hold'];
    const p = plan([frozen], { maxBlocksPerNode: 1 });
    assert.deepEqual(names(p.claims), ['v4']);
    assert.deepEqual(p.atLimit, []);
    assert.deepEqual(
      p.headroom.map((h) => [h.pool, h.free, h.blocks]),
      [['v4', 0, 1]],
    );
  });

  test('nodeSelector, Manual and disabled pools are not eligible', () => {
    const zoned = pool('zoned', { cidr: '10.3.0.0/16', nodeSelector: { matchLabels: { zone: 'a' } } });
    const manual = pool('manual', { cidr: '10.4.0.0/16', assignmentMode: 'Manual' });
    const off = pool('off', { cidr: '10.5.0.0/16', disabled: true });
    assert.deepEqual(names(plan([], {}, [zoned, manual, off], { zone: 'b' }).claims), []);
    assert.deepEqual(names(plan([], {}, [zoned, manual, off], { zone: 'a' }).claims), ['zoned']);
  });
});

describe('release', () => {
  const idle = { emptyBlockReleaseSeconds: 60 };
  test('an idle block goes after emptyBlockReleaseSeconds, never the last of its family', () => {
    const a = block(V4, '10.1.0.0/26', 0);
    const b = block(V4, '10.1.0.64/26', 0);
    const c6 = block(V6, 'fd00:1::/122', 0);
    assert.deepEqual(names(plan([a, b, c6], idle, [V4, V6]).releases), ['10-1-0-64-26']);
  });

  test('not before the time (nor before ipCooldownSeconds, when longer)', () => {
    const recent = [block(V4, '10.1.0.0/26', 0, T0 - 30_000), block(V4, '10.1.0.64/26', 0, T0 - 30_000)];
    assert.deepEqual(plan(recent, idle).releases, []);
    const old = [block(V4, '10.1.0.0/26', 0), block(V4, '10.1.0.64/26', 0)];
    assert.deepEqual(plan(old, { emptyBlockReleaseSeconds: 7200, ipCooldownSeconds: 60 }).releases, []);
  });

  test('never below the watermark (it would only be claimed again)', () => {
    const busy = block(V4, '10.1.0.0/26', 50); // 11 free
    const spare = block(V4, '10.1.0.64/26', 0); // 61 free
    assert.deepEqual(plan([busy, spare], idle).releases, []);
    assert.deepEqual(names(plan([busy, spare], { ...idle, minFreeAddressesPerNode: 5 }).releases), [
      '10-1-0-64-26',
    ]);
  });

  test('an idle frozen block goes and is never the one kept', () => {
    // both idle; the first by name is frozen (a deletionTimestamp): it goes, the other stays
    const frozen = block(V4, '10.1.0.0/26', 0);
    frozen.metadata.deletionTimestamp = '2026-12-01T07:00:00Z';
    const b = block(V4, '10.1.0.64/26', 0);
    assert.deepEqual(names(plan([frozen, b], idle).releases), ['10-1-0-0-26']);
  });

  test('an affinityClaimTime in the future does not keep an empty block from idling', () => {
    // b claimed "in 2099": read as the epoch, so it is idle and goes (a stays: first by name)
    const a = block(V4, '10.1.0.0/26', 0);
    const b = block(V4, '10.1.0.64/26', 0);
    b.spec.affinityClaimTime = '2099-01-01T00:00:00Z';
    assert.deepEqual(names(plan([a, b], idle).releases), ['10-1-0-64-26']);
  });

  test('an idle block of a pool the node may no longer use goes (the last of the family stays)', () => {
    const gone = pool('v4', { cidr: '10.1.0.0/16', disabled: true });
    const a = block(V4, '10.1.0.0/26', 0);
    const b = block(V4, '10.1.0.64/26', 0);
    assert.deepEqual(names(plan([a, b], idle, [gone]).releases), ['10-1-0-64-26']);
  });
});

// Pure block operations: ordinal choice (never-used, least recently freed, cooldown), allocate,
// release with preconditions, invariants, and the size of a full block.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkBlockInvariants,
  emptySinceMs,
  mustParseCidr,
  newBlock,
  nodeLabel,
  allocateOrdinal,
  pickOrdinal,
  releaseHandle,
} from 'blockipam/core';
import type { Owner, IPAMBlock } from 'blockipam/core';

const T0 = Date.parse('2026-11-29T08:00:00Z');
const owner = (n: number, node = 'node-a'): Owner => ({
  handle: `net.c${n}.eth0`,
  namespace: 'ns',
  pod: `pod-${n}`,
  podUID: `uid-${n}`,
  node,
});

function fresh(cidr = '10.0.0.0/26', node: string | null = 'node-a'): IPAMBlock {
  return newBlock({ cidr: mustParseCidr(cidr), pool: 'p', node, nowMs: T0 });
}

/** Allocates ordinals for owners 1..n (lowest free each time) and returns the block. */
function filled(block: IPAMBlock, n: number, nowMs = T0): IPAMBlock {
  let b = block;
  for (let i = 1; i <= n; i++) {
    const ordinal = pickOrdinal(b, { nowMs, cooldownSeconds: 0, mode: 'fresh' });
    assert.notEqual(ordinal, undefined);
    b = allocateOrdinal(b, ordinal!, owner(i), nowMs)!.block;
  }
  return b;
}

const pick = (
  b: IPAMBlock,
  nowMs: number,
  cooldownSeconds = 0,
  mode: 'fresh' | 'any' = 'fresh',
  excluded?: Set<number>,
): number | undefined => pickOrdinal(b, { nowMs, cooldownSeconds, mode, ...(excluded ? { excluded } : {}) });

describe('pickOrdinal', () => {
  it('starts after the network and gateway ordinals', () => {
    assert.equal(pick(fresh(), T0), 2);
  });
  it('never hands out the IPv4 broadcast ordinal: a full /26 holds 61 pods', () => {
    const b = filled(fresh(), 61);
    assert.equal(pick(b, T0, 0, 'any'), undefined);
    assert.equal(b.spec.allocations[63], undefined);
  });
  it('an IPv6 /126 holds two pods (ordinals 2 and 3)', () => {
    const b = filled(fresh('fd00::/126'), 2);
    assert.deepEqual(Object.keys(b.spec.allocations), ['2', '3']);
    assert.equal(pick(b, T0, 0, 'any'), undefined);
  });
  it('prefers never-used ordinals over freed ones', () => {
    let b = filled(fresh(), 3); // ordinals 2, 3, 4
    b = releaseHandle(b, 'net.c1.eth0', {}, T0).block; // frees 2
    assert.equal(pick(b, T0 + 3_600_000), 5);
  });
  it('reuses the least recently freed ordinal first', () => {
    let b = filled(fresh(), 61);
    b = releaseHandle(b, 'net.c5.eth0', {}, T0 + 1000).block; // ordinal 6
    b = releaseHandle(b, 'net.c2.eth0', {}, T0 + 2000).block; // ordinal 3
    assert.equal(pick(b, T0 + 5000), 6);
  });
  it('a cooling ordinal is only a last resort (mode any), until the cooldown is over', () => {
    let b = filled(fresh(), 61);
    b = releaseHandle(b, 'net.c1.eth0', {}, T0).block;
    assert.equal(pick(b, T0 + 10_000, 60, 'fresh'), undefined);
    assert.equal(pick(b, T0 + 10_000, 60, 'any'), 2);
    assert.equal(pick(b, T0 + 60_000, 60, 'fresh'), 2);
  });
  it('skips ordinals an IPReservation covers', () => {
    assert.equal(pick(fresh(), T0, 0, 'fresh', new Set([2, 3])), 4);
  });
});

describe('allocateOrdinal', () => {
  it('bumps the block sequence and records it on the allocation', () => {
    const b = fresh();
    const done = allocateOrdinal(b, 2, owner(1), T0);
    assert.ok(done);
    assert.equal(done.allocation.sequence, b.spec.sequence + 1);
    assert.equal(done.block.spec.sequence, b.spec.sequence + 1);
    assert.equal(b.spec.allocations[2], undefined, 'input not mutated');
  });
  it('refuses reserved, taken and out-of-range ordinals', () => {
    const b = allocateOrdinal(fresh(), 2, owner(1), T0)!.block;
    for (const ordinal of [0, 1, 63, 2, 64, -1, 2.5])
      assert.equal(allocateOrdinal(b, ordinal, owner(2), T0), undefined, String(ordinal));
  });
  it('labels a borrowing node', () => {
    const b = allocateOrdinal(fresh(), 2, owner(1, 'node-b'), T0)!.block;
    assert.equal(b.metadata.labels?.[nodeLabel('node-b')], 'borrowed');
    assert.equal(b.metadata.labels?.[nodeLabel('node-a')], 'affine');
    const back = releaseHandle(b, 'net.c1.eth0', {}, T0).block;
    assert.equal(back.metadata.labels?.[nodeLabel('node-b')], undefined);
  });
});

describe('releaseHandle', () => {
  const b = filled(fresh(), 2);
  const seq = b.spec.allocations[2]!.sequence;
  const cases: [string, { sequence?: number; podUID?: string }, number][] = [
    ['no precondition frees it', {}, 1],
    ['matching sequence frees it', { sequence: seq }, 1],
    ['stale sequence is refused', { sequence: seq - 1 }, 0],
    ['matching pod UID frees it', { podUID: 'uid-1' }, 1],
    ['another pod UID is refused', { podUID: 'uid-9' }, 0],
  ];
  for (const [title, preconditions, freed] of cases) {
    it(title, () => {
      const done = releaseHandle(b, 'net.c1.eth0', preconditions, T0 + 1000);
      assert.equal(done.released.length, freed);
      assert.equal(done.refused.length, 1 - freed);
      if (freed === 0) assert.equal(done.block, b, 'unchanged block returned as is');
      else assert.deepEqual(done.block.spec.freed, [{ ordinal: 2, releasedAt: '2026-11-29T08:00:01Z' }]);
    });
  }
  it('an unknown handle releases nothing', () => {
    assert.equal(releaseHandle(b, 'net.nope.eth0', {}, T0).released.length, 0);
  });
  it('emptySinceMs is the last release (or the claim)', () => {
    assert.equal(emptySinceMs(fresh(), T0), T0);
    assert.equal(emptySinceMs(b, T0), undefined);
    let e = releaseHandle(b, 'net.c1.eth0', {}, T0 + 5000).block;
    e = releaseHandle(e, 'net.c2.eth0', {}, T0 + 9000).block;
    assert.equal(emptySinceMs(e, T0 + 9000), T0 + 9000);
  });
});

describe('dates core does not trust and unsafe sequences (frozen.ts)', () => {
  const FUTURE = '2099-01-01T00:00:00Z';
  /** A full /26 whose ordinal 2 was freed with `releasedAt` written as `at`. */
  const freedAt = (at: string): IPAMBlock => {
    const b = releaseHandle(filled(fresh(), 61), 'net.c1.eth0', {}, T0).block;
    return { ...b, spec: { ...b.spec, freed: [{ ordinal: 2, releasedAt: at }] } };
  };
  it('a freed entry dated 2099 reads as cooled: its ordinal is picked fresh', () => {
    assert.equal(pick(freedAt(FUTURE), T0 + 1000, 60, 'fresh'), 2);
    // within the clock skew (60 s) the date is trusted: still cooling
    assert.equal(pick(freedAt('2026-11-29T08:00:30Z'), T0 + 1000, 60, 'fresh'), undefined);
  });
  it('a freed entry dated 2099 does not date later releases 2099', () => {
    const done = releaseHandle(freedAt(FUTURE), 'net.c2.eth0', {}, T0 + 5000);
    assert.deepEqual(done.block.spec.freed.at(-1), { ordinal: 3, releasedAt: '2026-11-29T08:00:05Z' });
  });
  it('a future affinityClaimTime or releasedAt does not keep an empty block from idling', () => {
    const claimed = { ...fresh(), spec: { ...fresh().spec, affinityClaimTime: FUTURE } };
    assert.equal(emptySinceMs(claimed, T0), 0);
    let e = releaseHandle(filled(fresh(), 1), 'net.c1.eth0', {}, T0 + 5000).block;
    e = { ...e, spec: { ...e.spec, freed: [...e.spec.freed, { ordinal: 3, releasedAt: FUTURE }] } };
    assert.equal(emptySinceMs(e, T0 + 9000), T0 + 5000);
  });
  it('a release in a block whose spec.sequence is above 2^52 writes the repaired sequence', () => {
    const b = filled(fresh(), 2);
    const unsafe = { ...b, spec: { ...b.spec, sequence: 2 ** 52 + 8 } };
    const done = releaseHandle(unsafe, 'net.c1.eth0', {}, T0 + 5000);
    assert.equal(done.block.spec.sequence, T0 + 5001, 'max(now, safe allocation sequences) + 1');
    assert.equal(releaseHandle(b, 'net.c1.eth0', {}, T0 + 5000).block.spec.sequence, b.spec.sequence);
  });
});

describe('checkBlockInvariants', () => {
  const good = releaseHandle(filled(fresh(), 4), 'net.c2.eth0', {}, T0 + 1000).block;
  it('holds for blocks built by the operations', () => {
    assert.deepEqual(checkBlockInvariants(good, { nowMs: T0 + 1000 }), []);
    assert.deepEqual(checkBlockInvariants(fresh('fd00::ffc0/122')), []);
  });
  const corrupt: [string, (b: IPAMBlock) => void, RegExp][] = [
    [
      'reserved ordinal allocated',
      (b) => (b.spec.allocations[0] = { ...b.spec.allocations[2]!, handle: 'x', sequence: 1 }),
      /ordinal 0 is reserved/,
    ],
    [
      'one handle twice',
      (b) => (b.spec.allocations[9] = { ...b.spec.allocations[2]!, sequence: 1 }),
      /holds ordinals/,
    ],
    [
      'allocated and freed',
      (b) => b.spec.freed.push({ ordinal: 2, releasedAt: '2026-11-29T08:00:02Z' }),
      /both allocated and freed/,
    ],
    [
      'duplicate sequence',
      (b) => (b.spec.allocations[4]!.sequence = b.spec.allocations[2]!.sequence),
      /share sequence/,
    ],
    [
      'sequence above the counter',
      (b) => (b.spec.allocations[2]!.sequence = b.spec.sequence + 5),
      /above the block's/,
    ],
    [
      'freed out of order',
      (b) => b.spec.freed.push({ ordinal: 30, releasedAt: '2026-11-29T07:00:00Z' }),
      /out of release order/,
    ],
    ['name not derived from the CIDR', (b) => (b.metadata.name = '10-0-0-64-26'), /name differs/],
    [
      'missing borrower label',
      (b) => (b.spec.allocations[2]!.node = 'node-z'),
      /node "node-z" holds ordinal 2 but the label node\.ipam\.blockipam\.io\/\w+=borrowed is missing/,
    ],
    ['stale node label', (b) => (b.metadata.labels![nodeLabel('node-q')] = 'borrowed'), /stale label/],
    [
      'ordinal key out of range',
      (b) => (b.spec.allocations[64] = { ...b.spec.allocations[2]!, handle: 'y', sequence: 2 }),
      /not an ordinal/,
    ],
    ['timestamp in the future', (b) => (b.spec.affinityClaimTime = '2027-01-01T00:00:00Z'), /in the future/],
  ];
  for (const [title, damage, problem] of corrupt) {
    it(`detects: ${title}`, () => {
      const b = structuredClone(good);
      damage(b);
      const problems = checkBlockInvariants(b, { nowMs: T0 + 1000 });
      assert.ok(
        problems.some((p) => problem.test(p)),
        problems.join('\n'),
      );
    });
  }
});

describe('encoding size', () => {
  // Realistic but generous owners: a 64-hex CRI container ID, a 32-character namespace, a 60-character
  // Deployment pod name, an EKS-style node name. (With every name at its Kubernetes maximum the entry
  // grows to ~800 bytes; docs/design-core.md §1 (Encoding) gives that worst case.)
  const owner64 = (n: number): Owner => ({
    handle: `k8s-pod-network.${n.toString(16).padStart(64, 'a')}.eth0`,
    network: 'k8s-pod-network',
    namespace: 'team-payments-production-eu-west'.slice(0, 32),
    pod: `checkout-service-frontend-canary-with-long-name-7d9f8c6b5d-${String(n).padStart(5, 'x')}`.slice(
      0,
      60,
    ),
    podUID: '0b3c2f1e-8f3a-4a57-9c1d-2e6f4b7a9c0d',
    node: 'ip-10-20-130-140.eu-central-1.compute.internal',
  });
  it('a full /26 (61 allocations, the most it holds) is under 32 KiB of JSON', () => {
    let b = fresh();
    for (let i = 0; i < 61; i++)
      b = allocateOrdinal(
        b,
        pickOrdinal(b, { nowMs: T0, cooldownSeconds: 0, mode: 'fresh' })!,
        owner64(i),
        T0,
      )!.block;
    assert.equal(Object.keys(b.spec.allocations).length, 61);
    const bytes = Buffer.byteLength(JSON.stringify(b));
    assert.ok(bytes < 32 * 1024, `${bytes} bytes`);
  });
  it('even 64 allocation entries (one per ordinal of a /26) are under 32 KiB', () => {
    const b = fresh();
    const allocations = Object.fromEntries(
      Array.from({ length: 64 }, (_, i) => [
        String(i),
        { ...owner64(i), allocatedAt: '2026-11-29T08:00:00Z', sequence: b.spec.sequence + i + 1 },
      ]),
    );
    const bytes = Buffer.byteLength(JSON.stringify({ ...b, spec: { ...b.spec, allocations } }));
    assert.ok(bytes < 32 * 1024, `${bytes} bytes`);
  });
});

describe('release order under clock skew', () => {
  it('a release by a node whose clock is behind keeps freed in order', () => {
    let b = filled(fresh(), 2);
    b = releaseHandle(b, 'net.c1.eth0', {}, T0 + 60_000).block;
    b = releaseHandle(b, 'net.c2.eth0', {}, T0 + 1_000).block; // a node 59 s behind
    assert.deepEqual(checkBlockInvariants(b, { nowMs: T0 + 60_000 }), []);
    assert.deepEqual(
      b.spec.freed.map((f) => f.releasedAt),
      ['2026-11-29T08:01:00Z', '2026-11-29T08:01:00Z'],
    );
  });
});

describe('corrupted blocks: reserved or out-of-range ordinals never reach freed', () => {
  /** A /29 (assignable 2..6) with 2..6 allocated plus a corrupt allocation on `key`. */
  function corrupt(key: string): IPAMBlock {
    const b = filled(fresh('10.0.0.0/29'), 5);
    const bad = { ...owner(9), allocatedAt: '2026-11-29T08:00:00Z', sequence: b.spec.sequence + 1 };
    return {
      ...b,
      spec: { ...b.spec, sequence: b.spec.sequence + 1, allocations: { ...b.spec.allocations, [key]: bad } },
    };
  }
  const cases: [string, string][] = [
    ['the broadcast ordinal', '7'],
    ['the network ordinal', '0'],
    ['the gateway ordinal', '1'],
    ['an out-of-range ordinal', '8'],
    ['a non-canonical key', '03'],
  ];
  for (const [title, key] of cases) {
    it(`releasing an allocation on ${title} removes it but does not free it`, () => {
      const done = releaseHandle(corrupt(key), 'net.c9.eth0', {}, T0 + 1000);
      assert.equal(done.released.length, 1);
      assert.equal(done.block.spec.allocations[key], undefined);
      assert.deepEqual(done.block.spec.freed, []);
      assert.deepEqual(checkBlockInvariants(done.block), []);
    });
  }
  it('the ordinals freed after such a release are reused', () => {
    let b = releaseHandle(corrupt('7'), 'net.c9.eth0', {}, T0 + 1000).block;
    b = releaseHandle(b, 'net.c2.eth0', {}, T0 + 2000).block; // ordinal 3
    assert.equal(pick(b, T0 + 5000), 3);
    assert.ok(allocateOrdinal(b, 3, owner(10), T0 + 5000));
  });
  it('pickOrdinal skips unassignable, duplicate or allocated freed entries', () => {
    let b = filled(fresh('10.0.0.0/29'), 5);
    b = releaseHandle(b, 'net.c3.eth0', {}, T0 + 1000).block; // ordinal 4
    const at = '2026-11-29T08:00:00Z';
    b = {
      ...b,
      spec: {
        ...b.spec,
        freed: [
          { ordinal: 7, releasedAt: at },
          { ordinal: 0, releasedAt: at },
          { ordinal: 99, releasedAt: at },
          { ordinal: 2, releasedAt: at }, // still allocated
          ...b.spec.freed,
        ],
      },
    };
    assert.equal(pick(b, T0 + 5000), 4);
    assert.equal(pick(b, T0 + 5000, 3600, 'any'), 4);
  });
});

describe('core/index.ts exports what seeding a block needs', () => {
  it('allocateOrdinal, cidrOf and blockLabels label a block exactly as the allocator does', async () => {
    const core = await import('blockipam/core');
    const b = fresh('10.0.0.64/26');
    assert.deepEqual(core.cidrOf(b), mustParseCidr('10.0.0.64/26'));
    const done = core.allocateOrdinal(b, 5, owner(1, 'node-b'), T0);
    assert.ok(done);
    assert.deepEqual(done.block.metadata.labels, core.blockLabels(done.block.spec, 'p', 4));
    assert.equal(done.block.metadata.labels?.[nodeLabel('node-b')], 'borrowed');
  });
});

describe('node label keys', () => {
  // Kubernetes label key: optional DNS-subdomain prefix (≤ 253) + "/" + name (≤ 63, alphanumeric
  // at both ends, [-_.] inside); values ≤ 63 of the same alphabet.
  const NAME = /^[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$/;
  const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  for (const node of ['n1', 'a'.repeat(253), 'ip-10-0-0-1.eu-west-1.compute.internal']) {
    it(`is a valid label key for a ${node.length}-character node name`, () => {
      const [prefix, name, ...rest] = nodeLabel(node).split('/');
      assert.equal(rest.length, 0);
      assert.ok(prefix && prefix.length <= 253 && SUBDOMAIN.test(prefix), prefix);
      assert.ok(name && name.length <= 63 && NAME.test(name), name);
    });
  }
});

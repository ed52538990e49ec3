// autoAssign on the memory datastore: affine → claim → borrow, limits, dual-stack, pool choice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ApiError,
  autoAssign,
  blockCidrFor,
  findByHandle,
  loadSnapshot,
  mustParseCidr,
  newBlock,
  nodeLabel,
  ordinalOf,
  parseIP,
  releaseByHandle,
} from 'blockipam/core';
import { claimBlock } from '../../core/allocator/claim.ts';
import { contextOf } from '../../core/allocator/context.ts';
import type { IPPool } from 'blockipam/core';
import { pod, pool, reservation, T0, world } from './fixtures.ts';

describe('autoAssign: blocks', () => {
  it('claims a block affine to the node, then allocates from it without claiming again', async () => {
    const w = world();
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    const b = await autoAssign(w.ds, { ...pod('b'), node: 'n1' }, w.options);
    assert.ok(a.ok && b.ok && a.ipv4 && b.ipv4);
    assert.equal(a.ipv4.block, b.ipv4.block);
    assert.equal(a.ipv4.prefixLength, 26);
    assert.equal(a.ipv4.ordinal, 2);
    assert.equal(b.ipv4.ordinal, 3);
    assert.equal(w.stats.claims, 1);
    const block = await w.ds.blocks.get(a.ipv4.block);
    assert.equal(block?.spec.affinity, 'n1');
    assert.deepEqual(await w.problems(), []);
  });

  it('a warm allocation (snapshot and labels given) costs 1 read + 1 write', async () => {
    const w = world();
    const snapshot = await loadSnapshot(w.ds);
    await autoAssign(
      w.ds,
      { ...pod('a'), node: 'n1', snapshot, nodeLabels: {}, namespaceLabels: {} },
      w.options,
    );
    const before = { ...w.ds.stats };
    await autoAssign(
      w.ds,
      { ...pod('b'), node: 'n1', snapshot, nodeLabels: {}, namespaceLabels: {} },
      w.options,
    );
    assert.deepEqual(
      { reads: w.ds.stats.reads - before.reads, writes: w.ds.stats.writes - before.writes },
      { reads: 1, writes: 1 },
    );
  });

  it('claims a second block when the first is full', async () => {
    const w = world({ pools: [pool('small', { cidr: '10.0.0.0/24', blockSize: 29 })] });
    const got = [];
    for (let i = 0; i < 6; i++) got.push(await autoAssign(w.ds, { ...pod(`p${i}`), node: 'n1' }, w.options));
    const blocks = new Set(got.map((g) => g.ok && g.ipv4?.block));
    assert.equal(blocks.size, 2); // a /29 holds 5 pods
    assert.equal(w.stats.claims, 2);
  });

  it('stops at maxBlocksPerNode with a message naming the limit', async () => {
    const w = world({
      pools: [pool('tiny', { cidr: '10.9.0.0/24', blockSize: 30 })],
      config: { maxBlocksPerNode: 3 },
    });
    for (let i = 0; i < 3; i++)
      assert.equal((await autoAssign(w.ds, { ...pod(`p${i}`), node: 'n1' }, w.options)).ok, true);
    const fourth = await autoAssign(w.ds, { ...pod('p3'), node: 'n1' }, w.options);
    assert.equal(fourth.ok, false);
    assert.ok(
      !fourth.ok &&
        fourth.reason === 'BlockLimit' &&
        /at maxBlocksPerNode \(3 blocks, all full\)/.test(fourth.message),
      JSON.stringify(fourth),
    );
  });

  it('borrows from another node when no block can be claimed, and labels the borrower', async () => {
    const w = world({ pools: [pool('one-block', { cidr: '10.1.0.0/26' })] });
    await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    const b = await autoAssign(w.ds, { ...pod('b'), node: 'n2' }, w.options);
    assert.ok(b.ok && b.ipv4?.borrowed);
    const block = await w.ds.blocks.get(b.ipv4.block);
    assert.equal(block?.metadata.labels?.[nodeLabel('n2')], 'borrowed');
    assert.equal(w.stats.borrows, 1);
    assert.equal((await findByHandle(w.ds, 'net.b.eth0', { node: 'n2' })).length, 1);
  });

  it('strictAffinity forbids borrowing', async () => {
    const w = world({
      pools: [pool('one-block', { cidr: '10.1.0.0/26' })],
      config: { strictAffinity: true },
    });
    await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    const b = await autoAssign(w.ds, { ...pod('b'), node: 'n2' }, w.options);
    assert.ok(
      !b.ok && b.reason === 'Exhausted' && /strictAffinity forbids borrowing/.test(b.message),
      JSON.stringify(b),
    );
  });

  it('prefers a never-used address in a new block over a cooling one', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.2.0.0/24', blockSize: 30 })],
      config: { ipCooldownSeconds: 60, emptyBlockReleaseSeconds: 60 },
    });
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(a.ok);
    await releaseByHandle(w.ds, 'net.a.eth0', { node: 'n1' }, w.options);
    w.now.ms += 1000;
    const b = await autoAssign(w.ds, { ...pod('b'), node: 'n1' }, w.options);
    assert.ok(b.ok && b.ipv4 && a.ipv4);
    assert.notEqual(b.ipv4.address, a.ipv4.address);
    w.now.ms += 60_000;
    const c = await autoAssign(w.ds, { ...pod('c'), node: 'n1' }, w.options);
    assert.ok(
      c.ok && c.ipv4?.address === a.ipv4.address,
      'cooled-down address reused before claiming a third block',
    );
  });

  it('skips addresses an IPReservation covers and blocks it covers wholly', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.3.0.0/25' })],
      reservations: [reservation('r', ['10.3.0.0/26', '10.3.0.66/31'])],
    });
    const a = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(a.ok && a.ipv4);
    assert.equal(a.ipv4.blockCidr, '10.3.0.64/26');
    assert.equal(a.ipv4.address, '10.3.0.68');
  });

  it('refuses a second assignment for the same handle and leaves the first untouched', async () => {
    const w = world();
    const first = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    const second = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(!second.ok && second.reason === 'HandleInUse');
    const held = await findByHandle(w.ds, 'net.a.eth0', { node: 'n1' });
    assert.deepEqual(
      held.map((h) => h.address),
      [first.ok ? first.ipv4?.address : ''],
    );
  });

  it('claims in a /48 IPv6 pool (2^74 blocks) without enumerating it', async () => {
    const w = world({ pools: [pool('v6', { cidr: 'fd00:1:2::/48' })] });
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1', ipv4: false, ipv6: true }, w.options);
    assert.ok(got.ok && got.ipv6 && !got.ipv4);
    assert.match(got.ipv6.address, /^fd00:1:2:/);
    assert.equal(got.ipv6.prefixLength, 122);
  });
});

describe('autoAssign: claim search', () => {
  it('fills a pool spanning two regions completely, one block per node, then borrows', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.40.0.0/15', blockSize: 20 })],
      config: { maxBlocksPerNode: 1 },
    });
    for (let i = 0; i < 32; i++)
      assert.equal((await autoAssign(w.ds, { ...pod(`p${i}`), node: `node-${i}` }, w.options)).ok, true);
    const names = (await w.ds.blocks.list()).map((b) => b.spec.cidr);
    assert.equal(new Set(names).size, 32, 'every /20 of the /15 claimed once');
    const extra = await autoAssign(w.ds, { ...pod('late'), node: 'node-late' }, w.options);
    assert.ok(extra.ok && extra.ipv4?.borrowed);
  });

  it('a claim reads 2 lists (affine blocks, one /16 region), not the 10,000 blocks of the pool', async () => {
    // 10,000 blocks spread over all 64 /16 regions of the /10 (7919 is prime: distinct indexes).
    const at = (i: number): bigint => (10n << 24n) + BigInt((i * 7919) % 65536) * 64n;
    const blocks = Array.from({ length: 10_000 }, (_, i) =>
      newBlock({
        cidr: blockCidrFor({ family: 4, value: at(i) }, 26),
        pool: 'big',
        node: `old-${i}`,
        nowMs: T0,
      }),
    );
    const w = world({ pools: [pool('big', { cidr: '10.0.0.0/10' })] });
    for (const b of blocks) w.ds.blocks.seed(b);
    const snapshot = await loadSnapshot(w.ds);
    const before = { ...w.ds.stats };
    const got = await autoAssign(
      w.ds,
      { ...pod('new'), node: 'node-new', snapshot, nodeLabels: {}, namespaceLabels: {} },
      w.options,
    );
    assert.ok(got.ok && got.ipv4);
    assert.equal(w.ds.stats.reads - before.reads, 2);
    const listed = w.ds.stats.listed - before.listed;
    assert.ok(listed > 1 && listed < 400, `listed ${listed} objects: one region's blocks (~156), not 10,000`);
    assert.ok(!blocks.some((b) => b.spec.cidr === got.ipv4?.blockCidr));
  });
});

describe('autoAssign: dual-stack', () => {
  const pools = [pool('v4', { cidr: '10.4.0.0/16' }), pool('v6', { cidr: 'fd00:4::/64' })];
  it('assigns one address per family', async () => {
    const w = world({ pools });
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1', ipv6: true }, w.options);
    assert.ok(got.ok && got.ipv4 && got.ipv6);
    assert.equal(ordinalOf(mustParseCidr(got.ipv6.blockCidr), parseIP(got.ipv6.gateway)!), 1);
    assert.equal(got.ipv6.prefixLength, 122);
  });
  it('is all-or-nothing: an IPv6 failure releases the IPv4 address', async () => {
    const w = world({ pools: [pools[0]!] });
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1', ipv6: true }, w.options);
    assert.ok(!got.ok && got.reason === 'NoPool');
    assert.deepEqual(await findByHandle(w.ds, 'net.a.eth0'), []);
    assert.equal(w.stats.rollbacks, 1);
    assert.deepEqual(await w.problems(), []);
  });
});

describe('autoAssign: pool choice', () => {
  const pools = [
    pool('general', { cidr: '10.10.0.0/16', nodeSelector: { matchLabels: { zone: 'a' } } }),
    pool('tenant', {
      cidr: '10.11.0.0/16',
      assignmentMode: 'Manual',
      namespaceSelector: { matchLabels: { tenant: 'blue' } },
    }),
    pool('overlapping', { cidr: '10.10.128.0/17' }, '2026-11-02T00:00:00Z'),
  ];
  const nodes = { n1: { zone: 'a' }, n2: { zone: 'b' } };
  const namespaces = { blue: { tenant: 'blue' }, red: { tenant: 'red' } };
  const cases: [string, { node: string; ns: string; pools?: string[] }, string][] = [
    ['nodeSelector matches: automatic pool', { node: 'n1', ns: 'red' }, 'pool general'],
    [
      'nodeSelector does not match, Manual skipped, overlapping pool shadowed',
      { node: 'n2', ns: 'red' },
      'NoPool',
    ],
    [
      'requested Manual pool allowed by namespaceSelector',
      { node: 'n2', ns: 'blue', pools: ['tenant'] },
      'pool tenant',
    ],
    ['requested pool by CIDR', { node: 'n2', ns: 'blue', pools: ['10.11.0.0/16'] }, 'pool tenant'],
    [
      'requested pool must still match its namespaceSelector',
      { node: 'n1', ns: 'red', pools: ['tenant'] },
      'PoolRefused: namespaceSelector',
    ],
    [
      'requested pool that overlaps an older pool is refused',
      { node: 'n1', ns: 'red', pools: ['overlapping'] },
      'PoolRefused: overlaps older IP pool "general"',
    ],
    [
      'requested pool that does not exist',
      { node: 'n1', ns: 'red', pools: ['nope'] },
      'PoolRefused: does not exist',
    ],
  ];
  for (const [title, req, want] of cases) {
    it(title, async () => {
      const w = world({ pools, nodes, namespaces });
      const got = await autoAssign(
        w.ds,
        { ...pod('x', req.ns), node: req.node, ...(req.pools ? { pools: req.pools } : {}) },
        w.options,
      );
      const summary = got.ok
        ? `pool ${got.ipv4?.pool}`
        : got.reason === 'PoolRefused'
          ? `PoolRefused: ${got.message}`
          : got.reason;
      assert.ok(
        summary.startsWith(want.split(':')[0]!) && summary.includes(want.split(': ')[1] ?? ''),
        `${summary} vs ${want}`,
      );
    });
  }
});

describe('claimBlock: fresh view of the limit', () => {
  it('stops with "limit" when the region LIST shows the node already at maxBlocksPerNode', async () => {
    const w = world({ pools: [pool('p', { cidr: '10.14.0.0/24', blockSize: 28 })] });
    const p = (await loadSnapshot(w.ds)).usable[0]!;
    const ctx = contextOf(w.ds, w.options);
    const first = await claimBlock(ctx, p, 'n1', [], { held: 0, max: 1, pools: [p] });
    assert.ok(first && first !== 'limit');
    // The caller listed 0 blocks before a concurrent ADD claimed `first`: the region LIST sees it.
    assert.equal(await claimBlock(ctx, p, 'n1', [], { held: 0, max: 1, pools: [p] }), 'limit');
    const second = await claimBlock(ctx, p, 'n1', [], { held: 0, max: 2, pools: [p] });
    assert.ok(second && second !== 'limit' && second.metadata.name !== first.metadata.name);
  });
});

describe('claimBlock: a pool the controller has not listed yet', () => {
  /** The claims policy's refusal of a pool missing from the controller's ConfigMap, as the API server words it. */
  const notListed = (name: string): ApiError =>
    new ApiError(
      `POST /apis/ipam.blockipam.io/v1alpha1/ipamblocks: HTTP 403: ipamblocks.ipam.blockipam.io "${name}" is forbidden: ` +
        "ValidatingAdmissionPolicy 'b-node-claims' with binding 'b-node-claims' denied request: blockipam: node n1 " +
        `may claim IPAMBlock ${name} only in a usable IPPool; label ipam.blockipam.io/pool is "p", which the ` +
        'controller has not listed in ConfigMap kube-system/b-claim-pools',
      403,
      { reason: 'Forbidden' },
    );
  /** `w`'s datastore with its first `refusals` block CREATEs refused as {@link notListed}; the sleeps it saw. */
  function refusing(
    refusals: number,
    options: { signal?: AbortSignal; onSleep?: (slept: number[]) => void } = {},
  ): { ctx: ReturnType<typeof contextOf>; slept: number[]; p: Promise<IPPool> } {
    const w = world({ pools: [pool('p', { cidr: '10.15.0.0/24', blockSize: 28 })] });
    const create = w.ds.blocks.create.bind(w.ds.blocks);
    let left = refusals;
    w.ds.blocks.create = (block) =>
      left-- > 0 ? Promise.reject(notListed(block.metadata.name)) : create(block);
    const slept: number[] = [];
    const ctx = contextOf(w.ds, {
      ...w.options,
      unlistedPool: {
        waitMs: 20_000,
        sleep: (ms) => {
          slept.push(ms);
          options.onSleep?.(slept);
          return Promise.resolve();
        },
      },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { ctx, slept, p: loadSnapshot(w.ds).then((s) => s.usable[0]!) };
  }

  it('without unlistedPool (the direct path): refused at once', async () => {
    const w = world({ pools: [pool('p', { cidr: '10.15.0.0/24', blockSize: 28 })] });
    let creates = 0;
    w.ds.blocks.create = (block) => {
      creates++;
      return Promise.reject(notListed(block.metadata.name));
    };
    const ctx = contextOf(w.ds, w.options);
    const p = (await loadSnapshot(w.ds)).usable[0]!;
    await assert.rejects(claimBlock(ctx, p, 'n1', []), /has not listed in ConfigMap/);
    assert.equal(creates, 1, 'one CREATE, no retry');
  });

  it('waits for the list (250 ms doubling to 2 s) and claims the same block once it is listed', async () => {
    const { ctx, slept, p } = refusing(5);
    const block = await claimBlock(ctx, await p, 'n1', []);
    assert.ok(block && block !== 'limit');
    assert.deepEqual(slept, [250, 500, 1000, 2000, 2000]);
    assert.equal(ctx.stats.claims, 1);
  });

  it('gives up after 20 s of waiting: the policy’s refusal is the answer', async () => {
    const { ctx, slept, p } = refusing(1_000);
    await assert.rejects(claimBlock(ctx, await p, 'n1', []), /has not listed in ConfigMap/);
    assert.equal(
      slept.reduce((a, b) => a + b, 0),
      21_750,
      'the waits add up to the bound (the last one crossing it)',
    );
  });

  it('the caller’s deadline during the wait: the policy’s refusal, not the abort, is the answer', async () => {
    const deadline = new AbortController();
    const { ctx, slept, p } = refusing(1_000, {
      signal: deadline.signal,
      onSleep: (s) => {
        if (s.length === 3) deadline.abort(new Error('deadline'));
      },
    });
    await assert.rejects(claimBlock(ctx, await p, 'n1', []), /has not listed in ConfigMap/);
    assert.deepEqual(slept, [250, 500, 1000]);
  });
});

describe('autoAssign: maxBlocksPerNode under parallel ADDs', () => {
  it('52 parallel allocations on one node with the limit at 4 (memory store) end with 4 blocks', async () => {
    const w = world({
      pools: [pool('p', { cidr: '10.13.0.0/24', blockSize: 28 })],
      config: { maxBlocksPerNode: 4 },
    });
    const outcomes = await Promise.all(
      Array.from({ length: 52 }, (_, i) => autoAssign(w.ds, { ...pod(`p${i}`), node: 'n1' }, w.options)),
    );
    assert.equal(outcomes.filter((o) => o.ok).length, 52);
    assert.equal((await w.ds.blocks.list()).length, 4);
    assert.deepEqual(await w.problems(), []);
  });
});

describe('autoAssign: maxBlocksPerNode is exceeded by at most the concurrent claimers − 1', () => {
  it('3 claimers of one node in 3 pools, all past their checks before any CREATE: 1 + 2 blocks', async () => {
    // The worst case the bound allows (docs/design-core.md §6): claims of one node in different
    // pools do not meet on one CIDR, so each in-flight claim can add a block past the limit.
    const w = world({
      pools: ['p1', 'p2', 'p3'].map((name, i) => pool(name, { cidr: `10.9${i}.0.0/24`, blockSize: 28 })),
      config: { maxBlocksPerNode: 1 },
    });
    const create = w.ds.blocks.create.bind(w.ds.blocks);
    const waiting: (() => void)[] = [];
    w.ds.blocks.create = async (block) => {
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === 3) for (const go of waiting) go();
      });
      return create(block);
    };
    const outcomes = await Promise.all(
      ['p1', 'p2', 'p3'].map((p, i) =>
        autoAssign(w.ds, { ...pod(`c${i}`), node: 'n1', pools: [p] }, w.options),
      ),
    );
    assert.ok(outcomes.every((o) => o.ok));
    assert.equal((await w.ds.blocks.list()).length, 3, 'limit 1 + (3 claimers − 1)');
    // Once the node holds its limit, no later ADD claims again: they all borrow or use its blocks.
    w.ds.blocks.create = create;
    const later = await autoAssign(w.ds, { ...pod('later'), node: 'n1', pools: ['p1'] }, w.options);
    assert.ok(later.ok);
    assert.equal((await w.ds.blocks.list()).length, 3);
  });
});

describe('autoAssign: handle already holding an address', () => {
  it('is refused even when another affine block has room', async () => {
    const w = world({ pools: [pool('p', { cidr: '10.12.0.0/24', blockSize: 30 })] });
    await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options); // fills block 1 (one pod per /30)
    await autoAssign(w.ds, { ...pod('b'), node: 'n1' }, w.options); // claims block 2
    await releaseByHandle(w.ds, 'net.b.eth0', { node: 'n1' }, w.options); // block 2 has room again
    const again = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(!again.ok && again.reason === 'HandleInUse', JSON.stringify(again));
    assert.equal((await findByHandle(w.ds, 'net.a.eth0')).length, 1);
  });
  it('no family requested is a failure value', async () => {
    const w = world();
    const got = await autoAssign(w.ds, { ...pod('a'), node: 'n1', ipv4: false }, w.options);
    assert.ok(!got.ok && got.reason === 'NoPool');
  });
});

// A failed assignment's message names the pool(s) tried, the reason and the next step within its
// first 300 characters (the pod's FailedCreatePodSandBox event), and carries its bounded reason.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assignIP, autoAssign } from 'blockipam/core';
import type { AssignOutcome } from 'blockipam/core';
import { toAddOutcome } from 'blockipam/core/node-ipam';
import type { AddFailureReason } from 'blockipam/core/node-ipam';
import { pod, pool, world } from './fixtures.ts';

/** The part of a message the event shows first. */
const HEAD = 300;

/** Asserts the failure, its bounded reason, and that each of `wanted` lies in the first 300 characters. */
function explains(
  got: AssignOutcome,
  want: { failure: string; reason: AddFailureReason; wanted: string[] },
): string {
  assert.ok(!got.ok, 'the assignment fails');
  assert.equal(got.reason, want.failure, got.message);
  const outcome = toAddOutcome(got);
  assert.equal(outcome.kind === 'allocated' ? undefined : outcome.reason, want.reason);
  const head = got.message.slice(0, HEAD);
  for (const w of want.wanted) assert.ok(head.includes(w), `${w} in: ${head}`);
  // the whole next-step sentence (it ends with a full stop before a space or the end)
  const step = /Next step: .*?\.(?= |$)/.exec(got.message);
  assert.ok(step && step.index + step[0].length <= HEAD, `next step within ${HEAD}: ${got.message}`);
  return got.message;
}

// Realistic long names: what must fit in 300 characters still does.
const POOL = 'tenant-blue-ipv4-pods-eu-west-1'; // 31 characters
const NODE = 'ip-10-20-30-40.eu-west-1.compute.internal'; // 41 characters

describe('failure texts: exhaustion', () => {
  it('pool exhausted: names the pool, "exhausted", no unclaimed block, and what to do', async () => {
    // a /29 of /30 blocks: 2 blocks of 1 pod each
    const w = world({ pools: [pool(POOL, { cidr: '10.1.0.0/29', blockSize: 30 })] });
    for (const id of ['a', 'b'])
      assert.ok((await autoAssign(w.ds, { ...pod(id), node: NODE }, w.options)).ok);
    const got = await autoAssign(w.ds, { ...pod('c'), node: NODE }, w.options);
    explains(got, {
      failure: 'Exhausted',
      reason: 'pool_exhausted',
      wanted: [
        `IP pool "${POOL}" exhausted`,
        `node "${NODE}"`,
        'no unclaimed block',
        'add or enlarge an IPPool',
      ],
    });
  });

  it('several pools tried: each is named', async () => {
    const w = world({
      pools: [
        pool('first', { cidr: '10.2.0.0/30', blockSize: 30 }),
        pool('second', { cidr: '10.3.0.0/30', blockSize: 30 }),
      ],
    });
    for (const id of ['a', 'b'])
      assert.ok((await autoAssign(w.ds, { ...pod(id), node: 'n1' }, w.options)).ok);
    explains(await autoAssign(w.ds, { ...pod('c'), node: 'n1' }, w.options), {
      failure: 'Exhausted',
      reason: 'pool_exhausted',
      wanted: ['IP pools "first", "second" exhausted'],
    });
  });

  it('node at maxBlocksPerNode with strictAffinity: names the limit, strictAffinity and both settings to change', async () => {
    const w = world({
      pools: [pool(POOL, { cidr: '10.4.0.0/28', blockSize: 30 })],
      config: { maxBlocksPerNode: 1, strictAffinity: true },
    });
    assert.ok((await autoAssign(w.ds, { ...pod('a'), node: NODE }, w.options)).ok);
    explains(await autoAssign(w.ds, { ...pod('b'), node: NODE }, w.options), {
      failure: 'BlockLimit',
      reason: 'node_block_limit',
      wanted: [
        `IP pool "${POOL}"`,
        `node "${NODE}"`,
        'is at maxBlocksPerNode (1 block, all full)',
        'strictAffinity forbids borrowing',
        'raise maxBlocksPerNode or set strictAffinity to false',
      ],
    });
  });

  it('autoAllocateBlocks false: says so and names the setting to change', async () => {
    const w = world({
      pools: [pool(POOL, { cidr: '10.5.0.0/28', blockSize: 30 })],
      config: { autoAllocateBlocks: false, strictAffinity: true },
    });
    explains(await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options), {
      failure: 'Exhausted',
      reason: 'pool_exhausted',
      wanted: [
        `IP pool "${POOL}" exhausted`,
        'autoAllocateBlocks is false',
        'set autoAllocateBlocks to true',
      ],
    });
  });
});

describe('failure texts: pool choice', () => {
  const pools = [
    pool(POOL, { cidr: '10.10.0.0/16', namespaceSelector: { matchLabels: { tenant: 'blue' } } }),
    pool('zone-a', { cidr: '10.11.0.0/16', nodeSelector: { matchLabels: { zone: 'a' } } }),
    pool('off', {
      cidr: '10.12.0.0/16',
      disabled: true,
      namespaceSelector: { matchLabels: { tenant: 'blue' } },
    }),
  ];
  const seed = {
    pools,
    namespaces: { red: { tenant: 'red' }, blue: { tenant: 'blue' } },
    nodes: { n1: { zone: 'b' } },
  };

  it('no pool matches namespace X: names the namespace and what to do first, then the pools passed over and why', async () => {
    const w = world(seed);
    const message = explains(await autoAssign(w.ds, { ...pod('a', 'red'), node: 'n1' }, w.options), {
      failure: 'NoPool',
      reason: 'no_matching_pool',
      wanted: [
        'no IPv4 IP pool matches namespace "red" on node "n1"',
        'relabel the namespace',
        'Pools passed over: "',
      ],
    });
    for (const passed of [
      `"${POOL}" (namespaceSelector excludes the namespace)`,
      '"zone-a" (nodeSelector excludes the node)',
      '"off" (namespaceSelector excludes the namespace)',
    ])
      assert.ok(message.includes(passed), `${passed} in: ${message}`);
  });

  it('the only pool that would match is disabled: leads with the disabled pool', async () => {
    const w = world({ ...seed, pools: [pools[2]!] });
    explains(await autoAssign(w.ds, { ...pod('a', 'blue'), node: 'n1' }, w.options), {
      failure: 'PoolDisabled',
      reason: 'pool_disabled',
      wanted: ['IP pool "off" disabled', 'namespace "blue"', 'set spec.disabled to false on IP pool "off"'],
    });
  });

  it('no pool of the family exists at all', async () => {
    const w = world(seed);
    const got = await autoAssign(
      w.ds,
      { ...pod('a', 'blue'), node: 'n1', ipv4: false, ipv6: true },
      w.options,
    );
    explains(got, {
      failure: 'NoPool',
      reason: 'no_matching_pool',
      wanted: ['no IPv6 IP pool exists', 'create an IPv6 IPPool'],
    });
  });

  const requested: [string, string, { failure: string; reason: AddFailureReason; wanted: string[] }][] = [
    [
      'the annotation names a pool that does not exist',
      'nope',
      {
        failure: 'PoolRefused',
        reason: 'no_matching_pool',
        wanted: ['requested IP pool "nope" does not exist', 'name an existing pool'],
      },
    ],
    [
      'the annotation names a pool whose namespaceSelector excludes the namespace',
      POOL,
      {
        failure: 'PoolRefused',
        reason: 'no_matching_pool',
        wanted: [`requested IP pool "${POOL}" does not allow namespace "red"`, 'label the namespace'],
      },
    ],
    [
      'the annotation names a disabled pool',
      'off',
      {
        failure: 'PoolDisabled',
        reason: 'pool_disabled',
        wanted: ['requested IP pool "off" is disabled', 'set spec.disabled to false'],
      },
    ],
  ];
  for (const [title, name, want] of requested)
    it(title, async () => {
      const w = world(seed);
      // "off" would admit namespace blue once enabled; the others are asked for from red
      const ns = name === 'off' ? 'blue' : 'red';
      explains(await autoAssign(w.ds, { ...pod('a', ns), node: 'n1', pools: [name] }, w.options), want);
    });
});

describe('failure texts: static addresses', () => {
  // The text lands in the requester's pod Event: the holder is named only within its own namespace.
  const takenCases: [
    string,
    ReturnType<typeof pod> | { handle: string },
    ReturnType<typeof pod> | { handle: string },
    RegExp,
    string[],
  ][] = [
    // same namespace: handle and pod named, the release command
    [
      "holder in the requester's namespace",
      pod('a'),
      pod('b'),
      /Held by net\.a\.eth0 \(pod default\/pod-a\) in block /,
      ['ipamctl release --ip 10.20.0.7'],
    ],
    // another namespace: neither its pod nor its handle (the container ID)
    [
      'holder in another namespace',
      pod('a', 'secret-team'),
      pod('b', 'tenant'),
      /Held by a pod in another namespace, block /,
      ['ipamctl show --ip 10.20.0.7'],
    ],
    // the requester names no pod: nobody is named
    [
      'the requester names no pod',
      pod('a'),
      { handle: 'net.b.eth0' },
      /Held by a pod \(named only to its namespace\), block /,
      ['ipamctl show --ip 10.20.0.7'],
    ],
    // the holder recorded no pod
    [
      'the holder records no pod',
      { handle: 'net.a.eth0' },
      pod('b'),
      /Held by an attachment with no pod, block /,
      ['ipamctl show --ip 10.20.0.7'],
    ],
  ];
  for (const [name, holder, requester, held, wanted] of takenCases)
    it(`requested IP taken, ${name}: names the address, the pool and the next step`, async () => {
      const w = world({ pools: [pool(POOL, { cidr: '10.20.0.0/24' })] });
      assert.ok((await assignIP(w.ds, { ...holder, node: 'n1', addresses: ['10.20.0.7'] }, w.options)).ok);
      const got = await assignIP(w.ds, { ...requester, node: 'n1', addresses: ['10.20.0.7'] }, w.options);
      const message = explains(got, {
        failure: 'Taken',
        reason: 'ip_taken',
        wanted: [`10.20.0.7 in IP pool "${POOL}" is taken`, ...wanted],
      });
      assert.match(message, held);
      if (!('pod' in holder) || !('pod' in requester) || holder.pod.namespace !== requester.pod.namespace) {
        assert.ok(!message.includes('net.a.eth0'), `no handle: ${message}`);
        assert.ok(!message.includes('pod-a'), `no pod name: ${message}`);
        if ('pod' in holder) assert.ok(!message.includes(holder.pod.namespace), `no namespace: ${message}`);
      }
    });

  it('requested IPv6 address taken in another namespace: the next step still fits the event head', async () => {
    const w = world({ pools: [pool(POOL, { cidr: 'fd00:1234:5678:9abc:def0:1234:5678:9a00/120' })] });
    const address = 'fd00:1234:5678:9abc:def0:1234:5678:9a07';
    assert.ok((await assignIP(w.ds, { ...pod('a', 'x'), node: NODE, addresses: [address] }, w.options)).ok);
    const got = await assignIP(w.ds, { ...pod('b', 'y'), node: NODE, addresses: [address] }, w.options);
    explains(got, { failure: 'Taken', reason: 'ip_taken', wanted: [`ipamctl show --ip ${address}`] });
  });

  it('a static address in a disabled pool', async () => {
    const w = world({ pools: [pool('off', { cidr: '10.21.0.0/24', disabled: true })] });
    explains(await assignIP(w.ds, { ...pod('a'), node: 'n1', addresses: ['10.21.0.7'] }, w.options), {
      failure: 'PoolDisabled',
      reason: 'pool_disabled',
      wanted: ['10.21.0.7: requested IP pool "off" is disabled', 'set spec.disabled to false'],
    });
  });
});

describe('failure texts: bounds', () => {
  it('a list of many pools passed over stays after the next step and names at most 4', async () => {
    const many = Array.from({ length: 9 }, (_, i) =>
      pool(`p${i}`, { cidr: `10.3${i}.0.0/16`, namespaceSelector: { matchLabels: { tenant: 'blue' } } }),
    );
    const w = world({ pools: many, namespaces: { red: { tenant: 'red' } } });
    const got = await autoAssign(w.ds, { ...pod('a', 'red'), node: 'n1' }, w.options);
    const message = explains(got, {
      failure: 'NoPool',
      reason: 'no_matching_pool',
      wanted: ['namespace "red"'],
    });
    assert.ok(message.indexOf('Next step') < message.indexOf('Pools passed over'), message);
    assert.match(message, /"p3" \(namespaceSelector excludes the namespace\) and 5 more\.$/);
  });
});

// A node's podCIDR as blocks: where podCIDRs come from on a Node, how many blocks of a pool's size
// tile one, the block size that keeps host-local's reservations, where an address lands (core's
// reserved ordinals), the CIDR to suggest for a pool, and which pool may hold a podCIDR.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCidr, mustParseCidr, parseIP, snapshotOf } from 'blockipam/core';
import type { IPPool, IPPoolSpec } from 'blockipam/core';
import {
  blocksPerPodCIDR,
  choosePool,
  coveringCidr,
  podCIDRBlockSize,
  podCIDRsOf,
  tilePlace,
} from '../../core/adopt/podcidr.ts';
import { pool } from './fixtures.ts';

describe('podCIDRsOf', () => {
  const cases: [string, { podCIDR?: string; podCIDRs?: string[] } | undefined, string[]][] = [
    // spec.podCIDRs is the list: IPv4 then IPv6 on a dual-stack node
    [
      'podCIDRs',
      { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] },
      ['10.244.1.0/24', 'fd00:10:244:1::/64'],
    ],
    // an older API server sets only spec.podCIDR
    ['podCIDR alone', { podCIDR: '10.244.2.0/24' }, ['10.244.2.0/24']],
    // an empty podCIDRs list falls back to podCIDR
    ['empty podCIDRs', { podCIDR: '10.244.3.0/24', podCIDRs: [] }, ['10.244.3.0/24']],
    // no spec: kube-controller-manager has not allocated one
    ['none', undefined, []],
    // host bits are cleared, not refused
    ['unmasked', { podCIDRs: ['10.244.4.7/24'] }, ['10.244.4.0/24']],
    // not a CIDR: dropped
    ['garbage', { podCIDRs: ['nope'] }, []],
  ];
  for (const [name, spec, want] of cases)
    it(name, () => {
      const node = { metadata: { name: 'n' }, ...(spec ? { spec } : {}) };
      assert.deepEqual(podCIDRsOf(node).map(formatCidr), want);
    });
});

describe('blocksPerPodCIDR: blocks of blockSize ≥ the podCIDR prefix tile it', () => {
  const cases: [string, number, number | undefined][] = [
    ['10.244.0.0/24', 24, 1], // one block per podCIDR
    ['10.244.0.0/24', 25, 2],
    ['10.244.0.0/24', 26, 4], // the default block size
    ['10.244.0.0/24', 30, 64],
    ['10.244.0.0/24', 23, undefined], // a block would span the neighbour's podCIDR
    ['10.244.0.0/24', 20, undefined],
    ['10.0.0.0/16', 20, 16], // a podCIDR wider than the largest block
    ['10.244.0.0/28', 28, 1],
    ['10.244.0.0/28', 26, undefined],
  ];
  for (const [cidr, blockSize, want] of cases)
    it(`${cidr} in /${blockSize} blocks: ${want ?? 'does not tile'}`, () =>
      assert.equal(blocksPerPodCIDR(mustParseCidr(cidr), blockSize), want));
});

describe('podCIDRBlockSize: the podCIDR prefix, within the family block range', () => {
  const cases: [string, number | undefined][] = [
    ['10.244.0.0/24', 24],
    ['10.244.0.0/30', 30],
    ['10.0.0.0/16', 20], // larger than a block: /20 blocks
    ['10.244.0.0/31', undefined], // smaller than the smallest block
    ['fd00::/64', 116],
    ['fd00::/120', 120],
    ['fd00::/127', undefined],
  ];
  for (const [cidr, want] of cases)
    it(`${cidr} → ${want ?? 'none'}`, () => assert.equal(podCIDRBlockSize(mustParseCidr(cidr)), want));
});

describe('tilePlace: block, ordinal and core isAssignable', () => {
  const cases: [string, number, string, number, boolean][] = [
    // /26 tiles of a /24: each tile's network, gateway and broadcast are reserved
    ['10.244.1.63', 26, '10-244-1-0-26', 63, false], // broadcast of the first tile
    ['10.244.1.64', 26, '10-244-1-64-26', 0, false], // network of the second
    ['10.244.1.65', 26, '10-244-1-64-26', 1, false], // gateway of the second
    ['10.244.1.66', 26, '10-244-1-64-26', 2, true],
    // one /24 block: host-local's own reservations, no more
    ['10.244.1.63', 24, '10-244-1-0-24', 63, true],
    ['10.244.1.64', 24, '10-244-1-0-24', 64, true],
    ['10.244.1.65', 24, '10-244-1-0-24', 65, true],
    ['10.244.1.1', 24, '10-244-1-0-24', 1, false], // host-local's gateway
    ['10.244.1.255', 24, '10-244-1-0-24', 255, false],
  ];
  for (const [address, blockSize, block, ordinal, assignable] of cases)
    it(`${address} in /${blockSize}`, () =>
      assert.deepEqual(tilePlace(parseIP(address)!, blockSize), { block, ordinal, assignable }));
});

describe('coveringCidr', () => {
  const cases: [string[], string | undefined][] = [
    [['10.244.0.0/24', '10.244.3.0/24'], '10.244.0.0/22'],
    [['10.244.0.0/24', '10.244.1.0/24'], '10.244.0.0/23'],
    [['10.244.5.0/24'], '10.244.5.0/24'],
    [['10.244.0.0/24', '10.245.0.0/24'], '10.244.0.0/15'],
    [[], undefined],
  ];
  for (const [cidrs, want] of cases)
    it(`${cidrs.join(' ') || 'none'} → ${want ?? 'none'}`, () => {
      const got = coveringCidr(cidrs.map(mustParseCidr));
      assert.equal(got && formatCidr(got), want);
    });
});

describe('choosePool: an eligible pool of the node covering the whole podCIDR', () => {
  const podCIDR = mustParseCidr('10.244.1.0/24');
  const p = (name: string, spec: IPPoolSpec, created?: string): IPPool => pool(name, spec, created);
  const cases: [string, IPPool[], string | RegExp][] = [
    ['covering', [p('cluster', { cidr: '10.244.0.0/16', blockSize: 24 })], 'cluster/24'],
    // default blockSize 26 still covers: the plan notes the split
    ['default block size', [p('cluster', { cidr: '10.244.0.0/16' })], 'cluster/26'],
    ['none', [], /^no IPPool overlaps it$/],
    ['elsewhere', [p('other', { cidr: '10.99.0.0/16' })], /^no IPPool overlaps it$/],
    [
      'part',
      [p('half', { cidr: '10.244.1.0/25', blockSize: 25 })],
      /IPPool half \(10\.244\.1\.0\/25\) covers only part of it/,
    ],
    // disabled is the safe state while host-local still hands out the podCIDRs' addresses
    ['disabled', [p('off', { cidr: '10.244.0.0/16', blockSize: 24, disabled: true })], 'off/24 disabled'],
    [
      'deleting',
      [
        {
          ...p('gone', { cidr: '10.244.0.0/16' }),
          metadata: { name: 'gone', deletionTimestamp: '2026-11-01T00:00:00Z' },
        },
      ],
      /IPPool gone .* is being deleted/,
    ],
    ['Manual', [p('man', { cidr: '10.244.0.0/16', assignmentMode: 'Manual' })], /is Manual/],
    [
      'nodeSelector',
      [p('zone', { cidr: '10.244.0.0/16', nodeSelector: { matchLabels: { zone: 'b' } } })],
      /nodeSelector that excludes the node/,
    ],
    [
      'shadowed',
      [
        p('old', { cidr: '10.0.0.0/8', assignmentMode: 'Manual' }, '2026-01-01T00:00:00Z'),
        p('new', { cidr: '10.244.0.0/16' }, '2026-02-01T00:00:00Z'),
      ],
      /IPPool old .* is Manual.*; IPPool new .* overlaps the older IPPool old/,
    ],
  ];
  for (const [name, pools, want] of cases)
    it(name, () => {
      const snapshot = snapshotOf({ config: undefined, pools, reservations: [] }, 0);
      const choice = choosePool(snapshot, podCIDR, { zone: 'a' });
      if (typeof want === 'string') {
        assert.ok(choice.pool, 'why' in choice ? choice.why : '');
        assert.equal(
          `${choice.pool.metadata.name}/${choice.blockSize}${choice.disabled ? ' disabled' : ''}`,
          want,
        );
      } else {
        assert.equal(choice.pool, undefined);
        assert.match('why' in choice ? choice.why : '', want);
      }
    });
});

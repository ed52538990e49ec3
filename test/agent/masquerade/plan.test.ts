// The masquerade planner and its nftables rendering: pools + non-masquerade CIDRs → the sets per
// family (outermost CIDRs only, sorted) → the one-transaction script that replaces the table.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatCidr, mustParseCidr } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import {
  outermost,
  planMasquerade,
  removalScript,
  renderRuleset,
} from '../../../block-controller/agent/masquerade/index.ts';

const pool = (name: string, cidr: string, disabled = false): IPPool => ({
  metadata: { name },
  spec: { cidr, ...(disabled ? { disabled } : {}) },
});
const cidrs = (...texts: string[]) => texts.map(mustParseCidr);

describe('planMasquerade', () => {
  const cases: {
    name: string;
    pools: IPPool[];
    nonMasq?: string[];
    v4: [string[], string[]];
    v6: [string[], string[]];
  }[] = [
    // no pool: nothing is a pod address, nothing is masqueraded
    { name: 'no pools', pools: [], nonMasq: ['10.0.0.0/8'], v4: [[], []], v6: [[], []] },
    // one pool: it is the source and the only exempt destination
    {
      name: 'one IPv4 pool',
      pools: [pool('a', '10.244.0.0/16')],
      v4: [['10.244.0.0/16'], ['10.244.0.0/16']],
      v6: [[], []],
    },
    // the non-masquerade CIDRs join the exempt set of their family only
    {
      name: 'dual-stack with non-masquerade CIDRs of both families',
      pools: [pool('a', '10.244.0.0/16'), pool('b', 'fd00:10:244::/56')],
      nonMasq: ['192.168.0.0/16', '2001:db8::/32'],
      v4: [['10.244.0.0/16'], ['10.244.0.0/16', '192.168.0.0/16']],
      v6: [['fd00:10:244::/56'], ['2001:db8::/32', 'fd00:10:244::/56']],
    },
    // a disabled pool still holds pods: it counts
    {
      name: 'disabled pool included, sorted by address',
      pools: [pool('new', '10.245.0.0/16'), pool('old', '10.244.0.0/16', true)],
      v4: [
        ['10.244.0.0/16', '10.245.0.0/16'],
        ['10.244.0.0/16', '10.245.0.0/16'],
      ],
      v6: [[], []],
    },
    // a non-masquerade CIDR covering a pool replaces it in the exempt set (no overlapping elements)
    {
      name: 'a wider non-masquerade CIDR absorbs the pool in the exempt set',
      pools: [pool('a', '10.244.0.0/16')],
      nonMasq: ['10.0.0.0/8', '10.244.1.0/24'],
      v4: [['10.244.0.0/16'], ['10.0.0.0/8']],
      v6: [[], []],
    },
    // a non-masquerade CIDR for a family without pools is of no use: no rule for that family
    {
      name: 'non-masquerade CIDRs of a family without pools are left out',
      pools: [pool('a', 'fd00::/64')],
      nonMasq: ['192.168.0.0/16'],
      v4: [[], []],
      v6: [['fd00::/64'], ['fd00::/64']],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const plan = planMasquerade(c.pools, cidrs(...(c.nonMasq ?? [])));
      assert.deepEqual([plan[4].sources, plan[4].exempt], c.v4);
      assert.deepEqual([plan[6].sources, plan[6].exempt], c.v6);
      assert.deepEqual(plan.skipped, []);
    });

  test('a pool whose cidr is no CIDR is skipped, named', () => {
    const plan = planMasquerade([pool('bad', '10.0.0.1/8'), pool('a', '10.244.0.0/16')], []);
    assert.deepEqual(plan.skipped, [{ pool: 'bad', cidr: '10.0.0.1/8' }]);
    assert.deepEqual(plan[4].sources, ['10.244.0.0/16']);
  });
});

describe('outermost', () => {
  const cases: [string, string[], string[]][] = [
    ['empty', [], []],
    ['disjoint, sorted', ['10.2.0.0/16', '10.1.0.0/16'], ['10.1.0.0/16', '10.2.0.0/16']],
    ['nested: only the outer one', ['10.1.2.0/24', '10.0.0.0/8', '10.1.0.0/16'], ['10.0.0.0/8']],
    ['duplicates collapse', ['10.1.0.0/16', '10.1.0.0/16'], ['10.1.0.0/16']],
    ['adjacent stay two', ['10.0.0.0/9', '10.128.0.0/9'], ['10.0.0.0/9', '10.128.0.0/9']],
    [
      'after an outer one, a later disjoint one is kept',
      ['10.0.0.0/8', '10.5.0.0/16', '11.0.0.0/16'],
      ['10.0.0.0/8', '11.0.0.0/16'],
    ],
    ['IPv6', ['fd00::/64', 'fd00::/48', 'fd01::/64'], ['fd00::/48', 'fd01::/64']],
  ];
  for (const [name, input, want] of cases)
    test(name, () => assert.deepEqual(outermost(cidrs(...input)).map(formatCidr), want));
});

describe('renderRuleset', () => {
  test('dual-stack: one table, sets and a rule per family, replaced in one transaction', () => {
    const plan = planMasquerade(
      [pool('a', '10.244.0.0/16'), pool('b', 'fd00:10:244::/56')],
      cidrs('192.168.0.0/16'),
    );
    assert.equal(
      renderRuleset(plan),
      [
        'table inet blockipam {}',
        'delete table inet blockipam',
        'table inet blockipam {',
        '  set pods4 {',
        '    type ipv4_addr',
        '    flags interval',
        '    elements = { 10.244.0.0/16 }',
        '  }',
        '  set exempt4 {',
        '    type ipv4_addr',
        '    flags interval',
        '    elements = { 10.244.0.0/16, 192.168.0.0/16 }',
        '  }',
        '  set pods6 {',
        '    type ipv6_addr',
        '    flags interval',
        '    elements = { fd00:10:244::/56 }',
        '  }',
        '  set exempt6 {',
        '    type ipv6_addr',
        '    flags interval',
        '    elements = { fd00:10:244::/56 }',
        '  }',
        '  chain postrouting {',
        '    type nat hook postrouting priority srcnat; policy accept;',
        '    ip saddr @pods4 ip daddr != @exempt4 masquerade',
        '    ip6 saddr @pods6 ip6 daddr != @exempt6 masquerade',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  test('IPv4 only: no IPv6 set or rule', () => {
    const script = renderRuleset(planMasquerade([pool('a', '10.244.0.0/16')], []));
    assert.doesNotMatch(script, /ip6|pods6|exempt6/);
    assert.match(script, /^ {4}ip saddr @pods4 ip daddr != @exempt4 masquerade$/m);
  });

  test('no pools: the table and its chain, no rule (nothing is masqueraded)', () => {
    const script = renderRuleset(planMasquerade([], cidrs('10.0.0.0/8')));
    assert.doesNotMatch(script, /masquerade|set /);
    assert.match(script, /type nat hook postrouting priority srcnat/);
  });

  test('another table name is used throughout', () => {
    const script = renderRuleset(planMasquerade([pool('a', '10.244.0.0/16')], []), 'other');
    assert.equal(script.match(/inet other/g)?.length, 3);
    assert.doesNotMatch(script, /blockipam/);
  });

  test('removal: created if absent, then deleted (never fails on an absent table)', () => {
    assert.equal(removalScript(), 'table inet blockipam {}\ndelete table inet blockipam\n');
  });
});

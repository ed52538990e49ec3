// The allocation annotations: the one set the plugin and the agent read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALLOCATION_ANNOTATIONS, allocationAnnotationsOf } from 'blockipam/core';

describe('allocationAnnotationsOf', () => {
  it('the set is the plugin’s two annotations', () =>
    assert.deepEqual(ALLOCATION_ANNOTATIONS, ['ipam.blockipam.io/ippools', 'ipam.blockipam.io/ip-addrs']));

  const cases: [string, Record<string, string> | undefined, Record<string, string>][] = [
    // no annotations at all
    ['undefined', undefined, {}],
    // kubectl's copy of the object and foreign annotations go
    [
      'others dropped',
      {
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        a: 'b',
        'ipam.blockipam.io/ip-addrs': '[]',
      },
      { 'ipam.blockipam.io/ip-addrs': '[]' },
    ],
    // an empty value is kept: the reader decides what it means
    ['empty value kept', { 'ipam.blockipam.io/ippools': '' }, { 'ipam.blockipam.io/ippools': '' }],
    // a name only inherited (a hostile prototype) is not an annotation
    [
      'own properties only',
      Object.create({ 'ipam.blockipam.io/ippools': '["x"]' }) as Record<string, string>,
      {},
    ],
  ];
  for (const [name, input, want] of cases)
    it(name, () => assert.deepEqual(allocationAnnotationsOf(input), want));
});

// readAnnotations (core/node-ipam/annotations.ts): the pools and static addresses a pod asks for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readAnnotations } from 'blockipam/core/node-ipam';

const POOLS = 'ipam.blockipam.io/ippools';
const IPS = 'ipam.blockipam.io/ip-addrs';
type Ann = Record<string, string> | undefined;

void describe('readAnnotations', () => {
  const cases: [string, Ann, Ann, ReturnType<typeof readAnnotations>][] = [
    // nothing asked: automatic pools, no static address
    ['none', undefined, undefined, { pools: [], ips: [] }],
    // an empty value counts as absent
    ['blank', { [POOLS]: ' ' }, undefined, { pools: [], ips: [] }],
    // the namespace's pools are the default
    [
      'namespace default',
      {},
      { [POOLS]: '["a"]' },
      { pools: ['a'], poolsFrom: `namespace annotation ${POOLS}`, ips: [] },
    ],
    // the pod's override them
    [
      'pod override',
      { [POOLS]: '["b", "10.9.0.0/16"]' },
      { [POOLS]: '["a"]' },
      { pools: ['b', '10.9.0.0/16'], poolsFrom: `pod annotation ${POOLS}`, ips: [] },
    ],
    // an empty pod list does not override the namespace's
    [
      'empty pod list',
      { [POOLS]: '[]' },
      { [POOLS]: '["a"]' },
      { pools: ['a'], poolsFrom: `namespace annotation ${POOLS}`, ips: [] },
    ],
    // static addresses, one per family
    ['ips', { [IPS]: '["10.1.2.3", "fd00::5"]' }, undefined, { pools: [], ips: ['10.1.2.3', 'fd00::5'] }],
    // ip-addrs on the namespace is not read
    ['ips on namespace', undefined, { [IPS]: '["10.1.2.3"]' }, { pools: [], ips: [] }],
    // malformed pod pools
    [
      'pod pools not JSON',
      { [POOLS]: 'a,b' },
      undefined,
      { problem: `pod annotation ${POOLS} is not a JSON list of strings` },
    ],
    // malformed namespace pools
    [
      'namespace pools not strings',
      undefined,
      { [POOLS]: '[1]' },
      { problem: `namespace annotation ${POOLS} is not a JSON list of strings` },
    ],
    // malformed ip-addrs
    [
      'ips an object',
      { [IPS]: '{}' },
      undefined,
      { problem: `pod annotation ${IPS} is not a JSON list of strings` },
    ],
    // not an address
    [
      'ips not an address',
      { [IPS]: '["x"]' },
      undefined,
      { problem: `pod annotation ${IPS}: "x" is not an IP address` },
    ],
    // with a prefix length (as Calico's ipAddrs refuses it)
    [
      'ips with prefix',
      { [IPS]: '["10.1.2.3/24"]' },
      undefined,
      {
        problem: `pod annotation ${IPS}: "10.1.2.3/24" is not an IP address (write the bare address, without a prefix length)`,
      },
    ],
    // two of one family
    [
      'ips two IPv4',
      { [IPS]: '["10.1.2.3", "10.1.2.4"]' },
      undefined,
      { problem: `pod annotation ${IPS} names two addresses of one family` },
    ],
  ];
  for (const [name, pod, namespace, expected] of cases)
    void it(name, () => assert.deepEqual(readAnnotations(pod, namespace), expected));
});

// What the plugin takes from a valid node cache, case by case: the pod context (only for the
// pod bound to this node with the runtime's UID), DEL's trust in cached blocks (every family),
// and STATUS's "ready" (proven from cached blocks or the pool's status, else undefined).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allocateOrdinal, buildNodeCache, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock, IPPool, NodeCacheDocument } from 'blockipam/core';
import {
  cacheHoldsHandle,
  podContextFromCache,
  statusFromCache,
} from '../../../ipam-plugin/backend/node-cache-use.ts';

const NODE = 'n1';
const T0 = Date.parse('2026-12-01T08:00:00Z');

function block(cidr: string, node: string | null, handles: string[] = [], pool = 'v4'): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool, node, nowMs: T0 });
  handles.forEach((handle, i) => {
    b = allocateOrdinal(b, 2 + i, { handle, node: NODE }, T0)!.block;
  });
  return { ...b, metadata: { ...b.metadata, resourceVersion: '1' } };
}

function pool(name: string, cidr: string, extra: Partial<IPPool['spec']> = {}, blocks?: number): IPPool {
  return {
    metadata: { name, creationTimestamp: '2026-11-01T00:00:00Z' },
    spec: { cidr, blockSize: cidr.includes(':') ? 126 : 30, ...extra },
    ...(blocks === undefined ? {} : { status: { blocks } }),
  };
}

function doc(over: { blocks?: IPAMBlock[]; pools?: IPPool[]; strict?: boolean } = {}): NodeCacheDocument {
  return buildNodeCache({
    clusterUID: 'c',
    node: { metadata: { name: NODE, labels: { zone: 'a' } } },
    heartbeatAtMs: T0,
    generation: 1,
    writer: { name: 't', pid: 1 },
    blocks: over.blocks ?? [block('10.0.0.0/30', NODE)],
    config: over.strict ? { metadata: { name: 'default' }, spec: { strictAffinity: true } } : null,
    pools: over.pools ?? [pool('v4', '10.0.0.0/16')],
    reservations: [],
    pods: [
      {
        metadata: {
          namespace: 'ns',
          name: 'p',
          uid: 'u1',
          annotations: { 'ipam.blockipam.io/ippools': '["v4"]' },
        },
        spec: { nodeName: NODE },
      },
      {
        metadata: {
          namespace: 'ns',
          name: 'bad',
          uid: 'u2',
          annotations: { 'ipam.blockipam.io/ippools': 'x' },
        },
        spec: { nodeName: NODE },
      },
      { metadata: { namespace: 'lonely', name: 'q', uid: 'u3' }, spec: { nodeName: NODE } },
    ],
    namespaces: [{ metadata: { name: 'ns', uid: 'ns-u', labels: { team: 't' } } }],
  });
}

describe('podContextFromCache', () => {
  const cases: [
    string,
    Parameters<typeof podContextFromCache>[1],
    string,
    Record<string, string> | undefined,
    unknown,
  ][] = [
    [
      'the cached pod, UID given',
      { namespace: 'ns', name: 'p', uid: 'u1' },
      NODE,
      undefined,
      {
        pod: { namespace: 'ns', name: 'p', uid: 'u1' },
        namespaceLabels: { team: 't' },
        pools: ['v4'],
        poolsFrom: 'pod annotation ipam.blockipam.io/ippools',
        ips: [],
      },
    ],
    [
      // The cached pod's UID may be a recreated pod's: without the runtime's UID none is recorded.
      'no UID from the runtime: the cached pod, and no UID recorded',
      { namespace: 'ns', name: 'p' },
      NODE,
      undefined,
      {
        pod: { namespace: 'ns', name: 'p' },
        namespaceLabels: { team: 't' },
        pools: ['v4'],
        poolsFrom: 'pod annotation ipam.blockipam.io/ippools',
        ips: [],
      },
    ],
    [
      'runtime annotations win',
      { namespace: 'ns', name: 'p', uid: 'u1' },
      NODE,
      {},
      { pod: { namespace: 'ns', name: 'p', uid: 'u1' }, namespaceLabels: { team: 't' }, pools: [], ips: [] },
    ],
    [
      'another UID (a recreated pod): read the API',
      { namespace: 'ns', name: 'p', uid: 'u9' },
      NODE,
      undefined,
      undefined,
    ],
    ['not in the cache: read the API', { namespace: 'ns', name: 'nope' }, NODE, undefined, undefined],
    [
      'asked for another node: read the API',
      { namespace: 'ns', name: 'p', uid: 'u1' },
      'n2',
      undefined,
      undefined,
    ],
    [
      'namespace not cached: read the API',
      { namespace: 'lonely', name: 'q', uid: 'u3' },
      NODE,
      undefined,
      undefined,
    ],
    [
      'a malformed annotation is a problem',
      { namespace: 'ns', name: 'bad', uid: 'u2' },
      NODE,
      undefined,
      { problem: 'pod annotation ipam.blockipam.io/ippools is not a JSON list of strings' },
    ],
  ];
  for (const [name, pod, node, annotations, want] of cases)
    it(name, () => assert.deepEqual(podContextFromCache(doc(), pod, node, annotations), want));
});

describe('podContextFromCache: the allocation annotations through the cache', () => {
  const noisy = { 'kubectl.kubernetes.io/last-applied-configuration': '{"kind":"Pod"}', note: 'x' };
  const cache = buildNodeCache({
    clusterUID: 'c',
    node: { metadata: { name: NODE } },
    heartbeatAtMs: T0,
    generation: 1,
    writer: { name: 't', pid: 1 },
    blocks: [],
    config: null,
    pools: [pool('v4', '10.0.0.0/16'), pool('v4b', '10.1.0.0/16')],
    reservations: [],
    pods: [
      {
        metadata: {
          namespace: 'ns',
          name: 'static',
          uid: 'u1',
          annotations: {
            ...noisy,
            'ipam.blockipam.io/ippools': '["v4b"]',
            'ipam.blockipam.io/ip-addrs': '["10.1.0.9"]',
          },
        },
        spec: { nodeName: NODE },
      },
      {
        metadata: { namespace: 'ns', name: 'plain', uid: 'u2', annotations: noisy },
        spec: { nodeName: NODE },
      },
    ],
    namespaces: [
      {
        metadata: {
          name: 'ns',
          uid: 'ns-u',
          annotations: { ...noisy, 'ipam.blockipam.io/ippools': '["v4"]' },
        },
      },
    ],
  });
  // The same document as an older agent wrote it (same version): every annotation kept.
  const older: NodeCacheDocument = {
    ...cache,
    pods: Object.fromEntries(
      Object.entries(cache.pods).map(([k, p]) => [k, { ...p, annotations: { ...noisy, ...p.annotations } }]),
    ),
    namespaces: {
      ns: { ...cache.namespaces.ns!, annotations: { ...noisy, ...cache.namespaces.ns!.annotations } },
    },
  };
  const cases: [string, { namespace: string; name: string; uid: string }, unknown][] = [
    // the pod's pools override the namespace's; its static address is read
    [
      'pod ippools and ip-addrs',
      { namespace: 'ns', name: 'static', uid: 'u1' },
      {
        pod: { namespace: 'ns', name: 'static', uid: 'u1' },
        namespaceLabels: {},
        pools: ['v4b'],
        poolsFrom: 'pod annotation ipam.blockipam.io/ippools',
        ips: ['10.1.0.9'],
      },
    ],
    // no pod annotation of its own: the namespace's ippools
    [
      'namespace ippools',
      { namespace: 'ns', name: 'plain', uid: 'u2' },
      {
        pod: { namespace: 'ns', name: 'plain', uid: 'u2' },
        namespaceLabels: {},
        pools: ['v4'],
        poolsFrom: 'namespace annotation ipam.blockipam.io/ippools',
        ips: [],
      },
    ],
  ];
  for (const [name, pod, want] of cases) {
    it(name, () => assert.deepEqual(podContextFromCache(cache, pod, NODE, undefined), want));
    it(`${name}, from an older agent's full annotation maps`, () =>
      assert.deepEqual(podContextFromCache(older, pod, NODE, undefined), want));
  }
  it('the other annotations are not in the cache', () =>
    assert.deepEqual(Object.keys(cache.pods['ns/plain']!.annotations), []));
});

describe('cacheHoldsHandle', () => {
  const d = doc({ blocks: [block('10.0.0.0/30', NODE, ['h4']), block('fd00::/126', NODE, ['h6'], 'v6')] });
  it('true when every assigned family holds the handle', () => {
    assert.equal(cacheHoldsHandle(d, 'h4', [4]), true);
    assert.equal(cacheHoldsHandle(d, 'h4', [4, 6]), false); // its IPv6 address may be newer than the cache
    assert.equal(cacheHoldsHandle(d, 'h6', [4]), false);
    assert.equal(cacheHoldsHandle(d, 'h4', []), false);
  });
});

describe('statusFromCache', () => {
  // /30 blocks: one assignable ordinal (2) after the network (0), gateway (1) and broadcast (3);
  // another node's /29 in which this node borrowed one address (so the cache holds it) has room.
  const full = block('10.0.0.0/30', NODE, ['a']);
  const cases: [string, NodeCacheDocument, readonly (4 | 6)[], string[], true | undefined][] = [
    ['an own block with room', doc(), [4], [], true],
    ['own block full, no pool status: not proven', doc({ blocks: [full] }), [4], [], undefined],
    [
      'own block full, pool status shows blocks left',
      doc({ blocks: [full], pools: [pool('v4', '10.0.0.0/16', {}, 5)] }),
      [4],
      [],
      true,
    ],
    [
      'own block full, pool status shows every block claimed',
      doc({ blocks: [full], pools: [pool('v4', '10.0.0.0/28', {}, 4)] }),
      [4],
      [],
      undefined,
    ],
    [
      'another node’s block with room, borrowing allowed',
      doc({ blocks: [full, block('10.0.0.8/29', 'n2', ['x'])] }),
      [4],
      [],
      true,
    ],
    [
      'another node’s block with room, strictAffinity',
      doc({ blocks: [full, block('10.0.0.8/29', 'n2', ['x'])], strict: true }),
      [4],
      [],
      undefined,
    ],
    ['no pool of the family', doc(), [6], [], undefined],
    [
      'nodeSelector excludes the node',
      doc({ pools: [pool('v4', '10.0.0.0/16', { nodeSelector: { matchLabels: { zone: 'b' } } })] }),
      [4],
      [],
      undefined,
    ],
    [
      'a named pool that is not the cached block’s',
      doc({ pools: [pool('v4', '10.0.0.0/16'), pool('other', '10.1.0.0/16')] }),
      [4],
      ['other'],
      undefined,
    ],
    [
      'a Manual pool is used only when named',
      doc({ pools: [pool('v4', '10.0.0.0/16', { assignmentMode: 'Manual' })] }),
      [4],
      [],
      undefined,
    ],
  ];
  for (const [name, d, families, pools, want] of cases)
    it(name, () => assert.equal(statusFromCache(d, NODE, families, pools), want));
});

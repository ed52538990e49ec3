// The node cache format: build (what is kept and dropped), encode/decode round trip, and every
// rejection a hostile or out-of-place document must get — as a value, never a throw.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  allocateOrdinal,
  buildNodeCache,
  cachedNamespaceOf,
  cachedPodOf,
  cacheSnapshot,
  decodeNodeCache,
  encodeNodeCache,
  mustParseCidr,
  newBlock,
  NODE_CACHE_MAX_BYTES,
  NODE_CACHE_VERSION,
} from 'blockipam/core';
import type { IPAMBlock, NodeCacheDocument, NodeCacheExpectation, Pod } from 'blockipam/core';
import { pool, reservation, T0 } from './fixtures.ts';

const NODE = 'node-a';
const CLUSTER = '5b7e1c2a-0000-4000-8000-000000000001';

function block(cidr: string, node: string | null, pods = 0): IPAMBlock {
  let b = newBlock({ cidr: mustParseCidr(cidr), pool: 'default-v4', node, nowMs: T0 });
  for (let i = 0; i < pods; i++) {
    b = allocateOrdinal(
      b,
      10 + i,
      { handle: `net.c${i}.eth0`, namespace: 'ns1', pod: `p${i}`, podUID: `u${i}`, node: NODE },
      T0,
    )!.block;
  }
  return { ...b, metadata: { ...b.metadata, resourceVersion: '1234', uid: 'b-uid' } };
}

function pod(ns: string, name: string, node: string | undefined, annotations?: Record<string, string>): Pod {
  return {
    metadata: { namespace: ns, name, uid: `uid-${ns}-${name}`, ...(annotations ? { annotations } : {}) },
    spec: node === undefined ? {} : { nodeName: node },
  };
}

function input(
  over: Partial<Parameters<typeof buildNodeCache>[0]> = {},
): Parameters<typeof buildNodeCache>[0] {
  return {
    clusterUID: CLUSTER,
    node: { metadata: { name: NODE, uid: 'node-uid', labels: { zone: 'a' } } },
    heartbeatAtMs: T0,
    generation: 7,
    writer: { name: 'test', pid: 1 },
    blocks: [block('10.244.0.0/26', NODE, 3), block('10.244.9.0/26', null)],
    config: { metadata: { name: 'default', managedFields: [{ manager: 'kubectl' }] } as never, spec: {} },
    pools: [pool('default-v4', { cidr: '10.244.0.0/16' })],
    reservations: [reservation('r', ['10.244.0.5/32'])],
    pods: [
      pod('ns1', 'p0', NODE, { 'ipam.blockipam.io/ippools': '["default-v4"]' }),
      pod('ns1', 'elsewhere', 'node-b'),
      pod('ns2', 'pending', undefined),
    ],
    namespaces: [
      { metadata: { name: 'ns1', uid: 'ns1-uid', labels: { team: 'x' } } },
      { metadata: { name: 'ns2', uid: 'ns2-uid' } },
    ],
    ...over,
  };
}

const expect = (over: Partial<NodeCacheExpectation> = {}): NodeCacheExpectation => ({
  clusterUID: CLUSTER,
  node: NODE,
  nowMs: T0 + 1000,
  maxAgeMs: 20_000,
  ...over,
});

/** The encoded document with one change applied to its parsed form. */
function mutated(change: (doc: Record<string, unknown>) => void): string {
  const doc = JSON.parse(encodeNodeCache(buildNodeCache(input()))) as Record<string, unknown>;
  change(doc);
  return JSON.stringify(doc);
}

describe('node cache: build', () => {
  it('keeps this node’s pods, their namespaces and the node’s labelled blocks; drops managedFields', () => {
    const doc = buildNodeCache(input());
    assert.deepEqual(Object.keys(doc.pods), ['ns1/p0']);
    assert.deepEqual(doc.pods['ns1/p0'], {
      uid: 'uid-ns1-p0',
      nodeName: NODE,
      annotations: { 'ipam.blockipam.io/ippools': '["default-v4"]' },
    });
    assert.deepEqual(Object.keys(doc.namespaces), ['ns1']);
    assert.deepEqual(doc.namespaces.ns1, { uid: 'ns1-uid', labels: { team: 'x' }, annotations: {} });
    // the unowned block carries no node label: not this node's
    assert.deepEqual(
      doc.blocks.map((b) => b.metadata.name),
      ['10-244-0-0-26'],
    );
    assert.equal(doc.blocks[0]!.metadata.resourceVersion, '1234');
    assert.equal('managedFields' in doc.config!.metadata, false);
    assert.deepEqual(doc.node, { name: NODE, uid: 'node-uid', labels: { zone: 'a' } });
    assert.equal(doc.version, NODE_CACHE_VERSION);
  });

  it('keeps only the allocation annotations of pods and namespaces (no last-applied-configuration)', () => {
    const lastApplied = JSON.stringify({
      spec: { containers: [{ env: [{ name: 'PASSWORD', value: 's3cret' }] }] },
    });
    const doc = buildNodeCache(
      input({
        pods: [
          pod('ns1', 'p0', NODE, {
            'kubectl.kubernetes.io/last-applied-configuration': lastApplied,
            'example.com/owner': 'team-x',
            'ipam.blockipam.io/ippools': '["default-v4"]',
            'ipam.blockipam.io/ip-addrs': '["10.244.0.7"]',
            'ipam.blockipam.io/other': 'not read by any allocation',
          }),
        ],
        namespaces: [
          {
            metadata: {
              name: 'ns1',
              uid: 'ns1-uid',
              labels: { team: 'x' },
              annotations: {
                'kubectl.kubernetes.io/last-applied-configuration': '{"kind":"Namespace"}',
                'ipam.blockipam.io/ippools': '["default-v4"]',
              },
            },
          },
        ],
      }),
    );
    assert.deepEqual(doc.pods['ns1/p0']?.annotations, {
      'ipam.blockipam.io/ippools': '["default-v4"]',
      'ipam.blockipam.io/ip-addrs': '["10.244.0.7"]',
    });
    assert.deepEqual(doc.namespaces.ns1?.annotations, { 'ipam.blockipam.io/ippools': '["default-v4"]' });
    assert.equal(encodeNodeCache(doc).includes('s3cret'), false);
  });
});

describe('node cache: decode', () => {
  it('round-trips a valid document, with its age', () => {
    const doc = buildNodeCache(input());
    const out = decodeNodeCache(encodeNodeCache(doc), expect());
    assert.equal(out.ok, true);
    assert.ok(out.ok);
    assert.deepEqual(out.cache, JSON.parse(JSON.stringify(doc)) as NodeCacheDocument);
    assert.equal(out.ageMs, 1000);
  });

  // Version 1 both before and after the cache kept only the allocation annotations: an older
  // agent's document, with every annotation, still decodes (and readers look up only those).
  it('accepts an older agent’s document with full annotation maps (same version)', () => {
    const text = mutated((d) => {
      d.version = 1;
      const pods = d.pods as Record<string, { annotations: Record<string, string> }>;
      pods['ns1/p0']!.annotations['kubectl.kubernetes.io/last-applied-configuration'] = '{"kind":"Pod"}';
    });
    const out = decodeNodeCache(text, expect());
    assert.ok(out.ok);
    assert.equal(out.cache.pods['ns1/p0']?.annotations['ipam.blockipam.io/ippools'], '["default-v4"]');
  });

  it('refuses every truncation as Malformed (never throws)', () => {
    const text = encodeNodeCache(buildNodeCache(input()));
    for (let cut = 0; cut < text.length; cut += Math.max(1, Math.floor(text.length / 200))) {
      const out = decodeNodeCache(text.slice(0, cut), expect());
      assert.equal(out.ok, false, `cut at ${cut}`);
      assert.ok(!out.ok);
      assert.equal(out.reason, 'Malformed', `cut at ${cut}`);
    }
  });

  const cases: [string, string, NodeCacheExpectation | undefined, string, RegExp][] = [
    [
      'another version',
      mutated((d) => (d.version = 2)),
      undefined,
      'Version',
      /version 2, this reader knows 1/,
    ],
    ['no version', mutated((d) => delete d.version), undefined, 'Version', /version undefined/],
    [
      'not a node cache',
      '{"kind":"Pod","version":1}',
      undefined,
      'Malformed',
      /kind: must be BlockipamNodeCache/,
    ],
    ['a JSON array', '[]', undefined, 'Malformed', /kind/],
    ['JSON null', 'null', undefined, 'Malformed', /kind/],
    ['empty file', '', undefined, 'Malformed', /not JSON/],
    [
      'another cluster',
      encodeNodeCache(buildNodeCache(input({ clusterUID: 'other' }))),
      undefined,
      'Cluster',
      /cluster other/,
    ],
    [
      'another node',
      encodeNodeCache(buildNodeCache(input())),
      expect({ node: 'node-b' }),
      'Node',
      /written for node node-a, this is node node-b/,
    ],
    [
      'a block of another node',
      mutated((d) => ((d.blocks as IPAMBlock[])[0]!.metadata.labels = {})),
      undefined,
      'Node',
      /block 10-244-0-0-26 does not carry/,
    ],
    [
      'heartbeat too old',
      encodeNodeCache(buildNodeCache(input())),
      expect({ nowMs: T0 + 20_001 }),
      'Stale',
      /20001 ms old, more than 20000/,
    ],
    [
      'heartbeat in the future',
      encodeNodeCache(buildNodeCache(input())),
      expect({ nowMs: T0 - 5_001 }),
      'Clock',
      /5001 ms in the future/,
    ],
    [
      'block without resourceVersion',
      mutated((d) => delete (d.blocks as IPAMBlock[])[0]!.metadata.resourceVersion),
      undefined,
      'Malformed',
      /blocks\[0\]\.metadata\.resourceVersion: must be a string/,
    ],
    [
      'allocation sequence a string',
      mutated(
        (d) =>
          ((
            (d.blocks as IPAMBlock[])[0]!.spec.allocations['10'] as unknown as Record<string, unknown>
          ).sequence = '1'),
      ),
      undefined,
      'Malformed',
      /blocks\[0\]\.spec\.allocations\["10"\]\.sequence: must be an integer/,
    ],
    [
      'allocations an array',
      mutated((d) => ((d.blocks as IPAMBlock[])[0]!.spec.allocations = [] as never)),
      undefined,
      'Malformed',
      /spec\.allocations: must be an object/,
    ],
    [
      'affinity a number',
      mutated((d) => ((d.blocks as IPAMBlock[])[0]!.spec.affinity = 3 as never)),
      undefined,
      'Malformed',
      /spec\.affinity: must be a string/,
    ],
    [
      'pool selector operator',
      mutated(
        (d) =>
          ((d.pools as never as { spec: unknown }[])[0]!.spec = {
            cidr: '10.244.0.0/16',
            nodeSelector: { matchExpressions: [{ key: 'k', operator: 'Gt' }] },
          }),
      ),
      undefined,
      'Malformed',
      /pools\[0\]\.spec\.nodeSelector\.matchExpressions\[0\]\.operator/,
    ],
    [
      'pool without spec',
      mutated((d) => delete (d.pools as never as { spec?: unknown }[])[0]!.spec),
      undefined,
      'Malformed',
      /pools\[0\]\.spec: must be an object/,
    ],
    [
      'reservation CIDRs not strings',
      mutated((d) => ((d.reservations as never as { spec: unknown }[])[0]!.spec = { reservedCIDRs: [1] })),
      undefined,
      'Malformed',
      /reservations\[0\]\.spec\.reservedCIDRs\[0\]: must be a string/,
    ],
    [
      'config field wrong type',
      mutated((d) => ((d.config as { spec: unknown }).spec = { maxBlocksPerNode: 'x' })),
      undefined,
      'Malformed',
      /config\.spec\.maxBlocksPerNode: must be an integer/,
    ],
    [
      'pod annotation not a string',
      mutated(
        (d) => ((d.pods as Record<string, { annotations: unknown }>)['ns1/p0']!.annotations = { a: 1 }),
      ),
      undefined,
      'Malformed',
      /pods\["ns1\/p0"\]\.annotations\.a: must be a string/,
    ],
    [
      'namespace without labels',
      mutated((d) => delete (d.namespaces as Record<string, { labels?: unknown }>).ns1!.labels),
      undefined,
      'Malformed',
      /namespaces\["ns1"\]\.labels/,
    ],
    [
      'heartbeat not a number',
      mutated((d) => (d.heartbeatAtMs = '2026')),
      undefined,
      'Malformed',
      /heartbeatAtMs: must be an integer/,
    ],
    [
      'node labels missing',
      mutated((d) => delete (d.node as { labels?: unknown }).labels),
      undefined,
      'Malformed',
      /node\.labels/,
    ],
  ];
  for (const [name, text, expectation, reason, message] of cases) {
    it(`refuses ${name} as ${reason}`, () => {
      const out = decodeNodeCache(text, expectation ?? expect());
      assert.ok(!out.ok, 'must be refused');
      assert.equal(out.reason, reason);
      assert.match(out.message, message);
    });
  }

  it('refuses a document over the size limit without parsing it', () => {
    const out = decodeNodeCache(' '.repeat(NODE_CACHE_MAX_BYTES + 1), expect());
    assert.ok(!out.ok);
    assert.equal(out.reason, 'TooLarge');
  });

  it('never throws on random mutations of a valid document', () => {
    const text = encodeNodeCache(buildNodeCache(input()));
    fc.assert(
      fc.property(fc.nat(text.length - 1), fc.string({ maxLength: 8 }), (at, insert) => {
        const out = decodeNodeCache(text.slice(0, at) + insert + text.slice(at + 1), expect());
        assert.equal(typeof out.ok, 'boolean');
      }),
      { numRuns: 500 },
    );
  });
});

describe('node cache: view', () => {
  it('gives the pool snapshot, pods and namespaces as own keys only', () => {
    const doc = buildNodeCache(
      input({
        pools: [
          pool('default-v4', { cidr: '10.244.0.0/16' }, '2026-11-01T00:00:00Z'),
          pool('late', { cidr: '10.244.0.0/20' }, '2026-11-02T00:00:00Z'),
        ],
      }),
    );
    const snapshot = cacheSnapshot(doc);
    assert.deepEqual(
      snapshot.usable.map((p) => p.metadata.name),
      ['default-v4'],
    );
    assert.deepEqual(snapshot.shadowed, [{ pool: 'late', by: 'default-v4' }]);
    assert.equal(snapshot.reservations.length, 1);
    assert.equal(snapshot.loadedAtMs, T0);
    assert.equal(cachedPodOf(doc, 'ns1', 'p0')?.uid, 'uid-ns1-p0');
    assert.equal(cachedPodOf(doc, 'ns1', 'elsewhere'), undefined);
    assert.equal(cachedNamespaceOf(doc, 'constructor'), undefined);
    assert.equal(cachedNamespaceOf(doc, '__proto__'), undefined);
    assert.equal(cachedNamespaceOf(doc, 'ns1')?.labels.team, 'x');
  });
});

/**
 * The claims policy on the real API server (issue: one compromised node must not touch another
 * node's pods): a node credential may CREATE only what core's claim creates — an empty block
 * affine to itself, with core's labels, inside a pool the controller lists `usable`, of that
 * pool's block size, overlapping no other pool. Each attacker's probe is refused with a message
 * naming the field — with the agent's credential and with the plugin's (its Node-bound token):
 * both claim; core's own claims (IPv4 and IPv6) pass; the controller's step publishes the
 * list with the controller's credential, which may write that ConfigMap and no other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { claimPoolsData, newBlock, nodeLabel, parseCidr } from 'blockipam/core';
import type { IPAMBlock, IPPool } from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { kubeClaimPoolsSink } from '../../block-controller/controller/admission/claim-pools.ts';
import { admin, adminOk, allowed, as, ChartIdentities, eventually, refused } from './identities.ts';

const NS = 'chart-claims';
const RELEASE = 'claims';
const CONFIGMAP = `${RELEASE}-blockipam-claim-pools`;
const chart = new ChartIdentities(NS, RELEASE);
const NODES = ['claims-n1', 'claims-n2'] as const;
const [N1, N2] = NODES;
const POOL = 'claims-pool'; // 10.78.0.0/16, /26 blocks
const POOL6 = 'claims-v6'; // fd00:78::/64, /122 blocks
const OFF = 'claims-off'; // 10.79.0.0/16, disabled

/** Core's claim of `cidr` in `pool` for `node`: exactly what the agent and the plugin create. */
const claim = (cidr: string, pool: string, node: string): IPAMBlock =>
  newBlock({ cidr: parseCidr(cidr)!, pool, node, nowMs: Date.now() });

/** `base` with spec / label changes: an attacker's variant of a claim. */
function variant(
  base: IPAMBlock,
  spec: Partial<IPAMBlock['spec']>,
  labels?: Record<string, string>,
): IPAMBlock {
  const cidr = spec.cidr ?? base.spec.cidr;
  return {
    ...base,
    metadata: { name: cidr.replace(/[.:/]/g, '-'), labels: labels ?? base.metadata.labels ?? {} },
    spec: { ...base.spec, ...spec },
  };
}

function pools(): IPPool[] {
  const list = JSON.parse(adminOk(['get', 'ippools', '-o', 'json'])) as { items: IPPool[] };
  return list.items.filter((p) => [POOL, POOL6, OFF].includes(p.metadata.name));
}

function sinkAs(kubeconfig: string): ReturnType<typeof kubeClaimPoolsSink> {
  const transport = new KubeTransport(loadKubeconfig(kubeconfig));
  return kubeClaimPoolsSink(transport, { namespace: NS, name: CONFIGMAP });
}

describe('the claims policy: a node credential creates only core’s claims', () => {
  let node1: string; // the agent's: node ServiceAccount, bound to its pod on claims-n1
  let plugin1: string; // the plugin's: plugin ServiceAccount, bound to Node claims-n1
  let controller: string;
  before(() => {
    chart.install(NODES, [
      ['agent-1', chart.nodeSA, N1],
      ['agent-2', chart.nodeSA, N2],
      ['controller', chart.controllerSA, N1],
    ]);
    for (const [name, spec] of [
      [POOL, { cidr: '10.78.0.0/16' }],
      [POOL6, { cidr: 'fd00:78::/64' }],
      [OFF, { cidr: '10.79.0.0/16', blockSize: 28, disabled: true }],
    ] as const)
      adminOk(['apply', '-f', '-'], {
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name },
        spec,
      });
    // the victim: node 2's block with its pod at ordinal 2 (10.78.1.2)
    adminOk(['create', '-f', '-'], claim('10.78.1.0/26', POOL, N2));
    node1 = chart.credential(chart.nodeSA, 'agent-1');
    plugin1 = chart.nodeCredential(chart.pluginSA, N1);
    controller = chart.credential(chart.controllerSA, 'controller');
  });
  after(() => {
    for (const pool of [POOL, POOL6, OFF])
      admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${pool}`]);
    admin(['delete', 'ippools', POOL, POOL6, OFF]);
    admin(['delete', 'ipamblocks', '10-250-0-0-26']);
    chart.uninstall(NODES);
  });

  test('before the controller lists the pools, every claim is refused (fail closed)', async () => {
    await eventually(() => {
      const r = as(node1, ['create', '-f', '-'], claim('10.78.0.0/26', POOL, N1));
      if (r.status === 0) admin(['delete', 'ipamblock', '10-78-0-0-26']);
      refused(
        r,
        /may claim IPAMBlock 10-78-0-0-26 only in a usable IPPool; label ipam\.blockipam\.io\/pool is "claims-pool", which the controller has not listed in ConfigMap chart-claims\/claims-blockipam-claim-pools/,
        'a claim before the list',
      );
    }, 'the claims policy takes effect');
  });

  test('the controller’s credential publishes the list; it may write no other ConfigMap, a node none', async () => {
    const sink = sinkAs(controller);
    assert.equal(await sink.publish(claimPoolsData(pools())), 'written');
    assert.equal(await sink.publish(claimPoolsData(pools())), 'unchanged');
    const data = JSON.parse(
      adminOk(['get', 'configmap', CONFIGMAP, '-n', NS, '-o', 'jsonpath={.data}']),
    ) as object;
    assert.deepEqual(data, {
      [OFF]: '10.79.0.0/16 28 disabled',
      [POOL]: '10.78.0.0/16 26 usable',
      [POOL6]: 'fd00:78::/64 122 usable',
    });
    adminOk(['create', 'configmap', 'other', '-n', NS]);
    refused(
      as(controller, ['patch', 'configmap', 'other', '-n', NS, '--type=merge', '-p', '{"data":{"a":"b"}}']),
      /cannot (get|patch) resource "configmaps"/,
      'the controller writes another ConfigMap',
    );
    refused(
      as(node1, [
        'patch',
        'configmap',
        CONFIGMAP,
        '-n',
        NS,
        '--type=merge',
        '-p',
        '{"data":{"x":"10.0.0.0/8 8 usable"}}',
      ]),
      /cannot (get|patch) resource "configmaps"/,
      'a node rewrites the pool list',
    );
  });

  test('core’s claims pass (IPv4 and IPv6: the region label is computed alike)', async () => {
    await eventually(() => {
      const r = as(node1, ['create', '-f', '-'], claim('10.78.0.0/26', POOL, N1));
      allowed(r, 'claim an IPv4 block');
    }, 'the published list takes effect');
    allowed(as(node1, ['create', '-f', '-'], claim('fd00:78::40/122', POOL6, N1)), 'claim an IPv6 block');
    allowed(as(plugin1, ['create', '-f', '-'], claim('10.78.4.0/26', POOL, N1)), 'the plugin claims');
  });

  test('every attacker’s probe on the create path is refused, naming what is wrong (agent’s and plugin’s credentials)', () => {
    const mine = claim('10.78.2.0/26', POOL, N1);
    const probes: [what: string, object: IPAMBlock, message: RegExp][] = [
      [
        'an unowned /28 inside node 2’s /26 holding node 2’s pod address for node 1 (traffic hijack)',
        variant(mine, {
          cidr: '10.78.1.0/28',
          affinity: null,
          allocations: {
            2: { handle: 'x.y.eth0', node: N1, allocatedAt: '2026-12-01T00:00:00Z', sequence: 1 },
          },
        }),
        /only with spec\.affinity = itself \(got none\)|may change a block's affinity|only empty|only as a \/26/,
      ],
      [
        'a /27 affine to node 1 overlapping node 2’s /26 (traffic hijack)',
        variant(mine, { cidr: '10.78.1.0/27' }),
        /may claim IPAMBlock 10-78-1-0-27 only as a \/26 inside IPPool claims-pool \(10\.78\.0\.0\/16\); spec\.cidr is 10\.78\.1\.0\/27/,
      ],
      [
        'an unowned block labelled affine to node 2 (maxBlocksPerNode denial of service)',
        variant(mine, { affinity: null }, { ...mine.metadata.labels, [nodeLabel(N2)]: 'affine' }),
        /only with spec\.affinity = itself \(got none\)|may change a block's affinity/,
      ],
      [
        'a block outside every pool',
        variant(mine, { cidr: '10.250.0.0/26' }),
        /only as a \/26 inside IPPool claims-pool \(10\.78\.0\.0\/16\); spec\.cidr is 10\.250\.0\.0\/26/,
      ],
      [
        'a block outside every pool, labelled with a pool that does not exist',
        variant(
          mine,
          { cidr: '10.250.0.0/26' },
          { ...mine.metadata.labels, 'ipam.blockipam.io/pool': 'nope' },
        ),
        /only in a usable IPPool; label ipam\.blockipam\.io\/pool is "nope", which the controller has not listed/,
      ],
      [
        'a block of a disabled pool',
        claim('10.79.0.0/28', OFF, N1),
        /only in a usable IPPool; label ipam\.blockipam\.io\/pool is "claims-off", which is disabled/,
      ],
      [
        'a claim holding an allocation',
        variant(mine, {
          allocations: {
            5: { handle: 'x.y.eth0', node: N1, allocatedAt: '2026-12-01T00:00:00Z', sequence: 1 },
          },
        }),
        /only empty \(spec\.allocations and spec\.freed must be empty/,
      ],
      [
        'a claim with an extra label',
        variant(mine, {}, { ...mine.metadata.labels, extra: 'x' }),
        /only with core's labels: .*; got .*extra=x/,
      ],
      [
        'a claim with a second node label',
        variant(mine, {}, { ...mine.metadata.labels, [nodeLabel(N2)]: 'affine' }),
        /only with core's labels/,
      ],
      [
        'a claim with the wrong region label',
        variant(mine, {}, { ...mine.metadata.labels, 'ipam.blockipam.io/region': '10-79-0-0-16' }),
        /only with core's labels: ipam\.blockipam\.io\/pool, ipam\.blockipam\.io\/ip-family=4, ipam\.blockipam\.io\/region=10-78-0-0-16/,
      ],
      [
        'a claim with the wrong family label',
        variant(mine, {}, { ...mine.metadata.labels, 'ipam.blockipam.io/ip-family': '6' }),
        /only with core's labels/,
      ],
      [
        'a claim for node 2',
        claim('10.78.2.0/26', POOL, N2),
        /only with spec\.affinity = itself \(got claims-n2\)|would go from none to claims-n2/,
      ],
    ];
    const admitted: string[] = [];
    for (const [who, credential] of [
      ['agent', node1],
      ['plugin', plugin1],
    ] as const)
      for (const [what, object, message] of probes) {
        const r = as(credential, ['create', '-f', '-'], object);
        if (r.status === 0) {
          admitted.push(`${who}: ${what}`);
          admin(['delete', 'ipamblock', object.metadata.name]);
          continue;
        }
        assert.match(r.stderr, message, `${who}: ${what}`);
      }
    assert.deepEqual(admitted, [], 'admitted probes');
    // node 2's block is untouched
    const victim = JSON.parse(adminOk(['get', 'ipamblock', '10-78-1-0-26', '-o', 'json'])) as IPAMBlock;
    assert.equal(victim.spec.affinity, N2);
  });

  test('a pool list naming an overlapping pool refuses claims in the overlap', () => {
    // as a kubectl-applied pool overlapping claims-pool would be listed (shadowed)
    const sink = sinkAs(controller);
    const data = { ...claimPoolsData(pools()), late: '10.78.128.0/17 24 shadowed' };
    return sink.publish(data).then(async (outcome) => {
      assert.equal(outcome, 'written');
      await eventually(() => {
        const r = as(node1, ['create', '-f', '-'], claim('10.78.200.0/26', POOL, N1));
        if (r.status === 0) admin(['delete', 'ipamblock', '10-78-200-0-26']);
        refused(
          r,
          /spec\.cidr overlaps IPPool\(s\) late besides its own \(claims-pool\)/,
          'a claim in the overlap',
        );
      }, 'the new list takes effect');
      allowed(
        as(node1, ['create', '-f', '-'], claim('10.78.3.0/26', POOL, N1)),
        'a claim outside the overlap',
      );
      await sink.publish(claimPoolsData(pools()));
    });
  });
});

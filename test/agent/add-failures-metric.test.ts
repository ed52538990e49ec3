/**
 * blockipam_agent_cni_add_failures_total{node,reason}: the agent's IPAM socket server over core's
 * node IPAM service (memory datastore) counts each ADD that allocated nothing by core's bounded
 * reason — a full pool, a pool the namespace may not use, a disabled pool, a taken static
 * address, the API server unreachable, not synced yet — and nothing for a served ADD or a DEL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { ADD_FAILURE_REASONS, createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { answerDoc, askSocket, cniCall, socketConf } from '../helpers/ipam-socket.ts';
import type { SocketAnswer } from '../helpers/ipam-socket.ts';
import { pool } from '../core/fixtures.ts';
import { quietLog as log, unreachableIpam } from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'add-failures-'));

/** An ADD call on the wire for container `id` of pod `ns/id`. */
function add(id: string, more: { ns?: string; pools?: string[]; staticIPs?: string[] } = {}) {
  const conf = {
    ...socketConf({ timeoutMs: 5000, ...(more.pools ? { ipv4Pools: more.pools } : {}) }),
    name: 'net',
    ...(more.staticIPs ? { runtimeConfig: { ips: more.staticIPs } } : {}),
  };
  return cniCall('ADD', conf, {
    CNI_CONTAINERID: id,
    CNI_ARGS: `K8S_POD_NAMESPACE=${more.ns ?? 'red'};K8S_POD_NAME=${id}`,
  });
}
/** The CNI code of an answer: 0 for success. */
const codeOf = (answer: SocketAnswer): unknown => (answer.code === 0 ? 0 : answerDoc(answer)?.code);

/** The counter's value per reason for node n1 (every reason present). */
async function failures(metrics: ReturnType<typeof createAgentMetrics>): Promise<Record<string, number>> {
  const got = await metrics.cniAddFailures.get();
  return Object.fromEntries(
    got.values.filter((v) => v.labels.node === 'n1').map((v) => [String(v.labels.reason), v.value]),
  );
}

const zero = Object.fromEntries(ADD_FAILURE_REASONS.map((r) => [r, 0]));

describe('blockipam_agent_cni_add_failures_total', () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  test('each failed ADD counts once under its reason; served ADDs and DELs count nothing', async () => {
    const ds = new MemoryDatastore({
      pools: [
        // a /29 of /30 blocks: 2 pods
        pool('tiny', { cidr: '10.1.0.0/29', blockSize: 30 }),
        pool('blue-only', {
          cidr: '10.2.0.0/24',
          assignmentMode: 'Manual',
          namespaceSelector: { matchLabels: { tenant: 'blue' } },
        }),
        pool('off', { cidr: '10.3.0.0/24', assignmentMode: 'Manual', disabled: true }),
      ],
      namespaces: [{ metadata: { name: 'red', labels: { tenant: 'red' } } }],
      pods: ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => ({
        metadata: { name, namespace: 'red', uid: `uid-${name}` },
        spec: { nodeName: 'n1' },
      })),
      nodes: [{ metadata: { name: 'n1' } }],
    });
    const metrics = createAgentMetrics();
    const path = join(root, 'a.sock');
    const server = await startIpamServer({
      path,
      node: 'n1',
      ipam: () => createNodeIpam({ ds, inputs: datastoreInputs(ds) }),
      serves: () => undefined,
      log,
      metrics,
    });
    try {
      const answers = [];
      for (const request of [
        add('a'),
        add('b'),
        add('c'), // the pool is full: pool_exhausted
        add('d', { pools: ['blue-only'] }), // namespaceSelector excludes red: no_matching_pool
        add('e', { pools: ['off'] }), // disabled: pool_disabled
        add('f', { pools: ['tiny'], staticIPs: ['10.1.0.2'] }), // a's address: ip_taken
      ])
        answers.push(await askSocket(path, request));
      // allocated, allocated, exhausted (101), rejected (104) twice, addressRefused (102)
      assert.deepEqual(answers.map(codeOf), [0, 0, 101, 104, 104, 102]);
      const del = add('a');
      assert.equal(codeOf(await askSocket(path, { ...del, env: { ...del.env, CNI_COMMAND: 'DEL' } })), 0);
      assert.deepEqual(await failures(metrics), {
        ...zero,
        pool_exhausted: 1,
        no_matching_pool: 1,
        pool_disabled: 1,
        ip_taken: 1,
      });
    } finally {
      await server.close(1000);
    }
  });

  test('error answers: not synced → not_ready; the API server unreachable → api_unreachable', async () => {
    const metrics = createAgentMetrics();
    let service: NodeIpam | string = 'the agent has not synced yet (blocks)';
    const path = join(root, 'b.sock');
    const server = await startIpamServer({
      path,
      node: 'n1',
      ipam: () => service,
      serves: () => undefined,
      log,
      metrics,
    });
    try {
      const early = answerDoc(await askSocket(path, add('a')));
      assert.deepEqual(
        [early?.code, early?.details],
        [11, 'node agent: the agent has not synced yet (blocks)'],
      );
      service = unreachableIpam;
      assert.equal(answerDoc(await askSocket(path, add('a')))?.msg, 'datastore unreachable');
      assert.deepEqual(await failures(metrics), { ...zero, not_ready: 1, api_unreachable: 1 });
    } finally {
      await server.close(1000);
    }
  });
});

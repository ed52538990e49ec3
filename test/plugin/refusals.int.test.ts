/**
 * Refusals reach the operator whole, against the real API server with the chart's admission
 * policies installed (test/charts/identities.ts renders and applies the chart): a claim the
 * claims policy denies — no pool is listed usable yet, so every node claim is refused — comes
 * back from an ADD as CNI 107 naming the policy, with the policy's whole reason (the node, the
 * block, the pool and the ConfigMap: past the 300 characters it was once cut at), on the direct
 * path (the plugin's own Node-bound token) and through a real node agent (its pod-bound token).
 * A netconf naming another node than the credential's is CNI 7 before any write.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { newBlock, parseCidr } from 'blockipam/core';
import { createKubeBackend } from '../../ipam-plugin/backend/kube-backend.ts';
import { eventually as eventuallyValue, scrape, startAgent } from '../agent/agent-process.ts';
import type { AgentProcess } from '../agent/agent-process.ts';
import { admin, adminOk, as, ChartIdentities, eventually, refused } from '../charts/identities.ts';
import { baseEnv, invoke } from './helpers/run-dispatch.ts';
import { forwardedPlugin, runPlugin } from './helpers/plugin-exe.ts';

const NS = 'plugin-refusals';
const RELEASE = 'refusals';
const chart = new ChartIdentities(NS, RELEASE);
const NODES = ['refusals-n1', 'refusals-n2'] as const;
const [N1, N2] = NODES;
/** The policy's message names the pool last, past the 300 characters it was once cut at. */
const POOL = 'refusals-pool-named-last-in-the-admission-message'; // names: ≤ 63
const CONFIGMAP = `${NS}/${RELEASE}-blockipam-claim-pools`;

/** The claims policy's reason for a claim by `node` of a block in POOL (the chart's words). */
const reason = (node: string): RegExp =>
  new RegExp(
    `blockipam: node ${node} may claim IPAMBlock 10-77-\\d+-\\d+-26 only in a usable IPPool; label ipam\\.blockipam\\.io/pool is "${POOL}", which the controller has not listed in ConfigMap ${CONFIGMAP}`,
  );

/** Blocks affine to `node` (by spec: the admin's view). */
const blocksOf = (node: string): string[] =>
  (
    JSON.parse(adminOk(['get', 'ipamblocks', '-o', 'json'])) as {
      items: { metadata: { name: string }; spec: { affinity: string | null } }[];
    }
  ).items
    .filter((b) => b.spec.affinity === node)
    .map((b) => b.metadata.name);

const netconf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'refusals',
    type: 'ptp',
    ipam: { type: 'blockipam', ipv4Pools: [POOL], timeoutMs: 20_000, ...ipam },
  });

const add = (containerID: string, stdin: string) =>
  invoke({ ...baseEnv, CNI_COMMAND: 'ADD', CNI_CONTAINERID: containerID }, stdin, createKubeBackend);

describe('refusals reach the CNI error whole (the chart’s admission policies)', () => {
  let plugin1: string; // the plugin's credential: a token bound to Node refusals-n1
  let agent1: string; // the agent's: bound to its pod on refusals-n1
  before(async () => {
    chart.install(NODES, [['agent-1', chart.nodeSA, N1]]);
    adminOk(['apply', '-f', '-'], {
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: POOL },
      spec: { cidr: '10.77.0.0/16', blockSize: 26 },
    });
    plugin1 = chart.nodeCredential(chart.pluginSA, N1);
    agent1 = chart.credential(chart.nodeSA, 'agent-1');
    // the policy and its binding take ~1 s to take effect: probe until a claim is refused
    const probe = newBlock({ cidr: parseCidr('10.77.255.0/26')!, pool: POOL, node: N1, nowMs: Date.now() });
    await eventually(() => {
      const r = as(plugin1, ['create', '-f', '-'], probe);
      if (r.status === 0) admin(['delete', 'ipamblock', probe.metadata.name]);
      refused(r, reason(N1), 'a claim before the pool is listed');
    }, 'the claims policy takes effect');
  });
  after(() => {
    admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
    admin(['delete', 'ippool', POOL]);
    chart.uninstall(NODES);
  });

  it('direct path: 107 naming the policy, the whole reason in details', async () => {
    const r = await add(
      'refusals-direct',
      netconf({ mode: 'standalone', kubeconfig: plugin1, nodeName: N1 }),
    );
    assert.equal(r.json?.code, 107, r.stdout);
    assert.equal(r.json?.msg, 'admission policy denied the write');
    const details = String(r.json?.details);
    assert.match(
      details,
      new RegExp(
        `^ValidatingAdmissionPolicy '${RELEASE}-blockipam-node-claims' denied the request \\(HTTP 403 Forbidden\\)`,
      ),
    );
    assert.match(details, reason(N1));
    assert.ok(details.length > 300, `${details.length} characters`);
    assert.deepEqual(blocksOf(N1), []);
  });

  it('a netconf naming another node than the credential’s: 7 before any write', async () => {
    const r = await add(
      'refusals-mismatch',
      netconf({ mode: 'standalone', kubeconfig: plugin1, nodeName: N2 }),
    );
    assert.equal(r.json?.code, 7, r.stdout);
    assert.equal(r.json?.msg, 'node name mismatch');
    assert.match(
      String(r.json?.details),
      new RegExp(`belongs to node "${N1}", but this plugin's node name is "${N2}" \\(ipam\\.nodeName`),
    );
    assert.deepEqual(blocksOf(N2), []);
  });

  describe('through the node agent', () => {
    let agent: AgentProcess;
    let socket = '';
    before(async () => {
      socket = join(chart.dir, 'agent', 'ipam.sock');
      agent = startAgent(N1, ['--kubeconfig', agent1, '--ipam-socket', socket]);
      await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening', 60_000);
      await eventuallyValue(
        'the agent ready',
        async () => ((await scrape(agent, '/readyz')).status === 200 ? true : undefined),
        60_000,
      );
    });
    after(() => agent?.kill());

    it('agent path: the agent’s refusal text reaches the CNI error whole', async () => {
      // the Go forwarder as installed; details prefixed "node agent:" only when the agent served it
      const r = await runPlugin(
        { ...baseEnv, CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'refusals-agent' },
        netconf({ agentSocket: socket, kubeconfig: plugin1, nodeName: N1 }),
        forwardedPlugin(join(chart.dir, 'cni-bin')),
      );
      assert.equal(r.json?.code, 107, r.stdout);
      assert.equal(r.json?.msg, 'admission policy denied the write');
      const details = String(r.json?.details);
      assert.match(
        details,
        new RegExp(
          `^node agent: ValidatingAdmissionPolicy '${RELEASE}-blockipam-node-claims' denied the request`,
        ),
      );
      assert.match(details, reason(N1));
      assert.deepEqual(blocksOf(N1), []);
    });
  });
});

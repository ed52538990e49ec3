/**
 * Install mode on the real API server: the plugin executable, the conflist and the plugin's
 * kubeconfig land with their modes; the kubeconfig's token is a TokenRequest token bound to the
 * agent's pod (a Pod object this test creates), is refreshed on schedule, and dies with the pod.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeTransport } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { spawnSync } from 'node:child_process';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { AGENT_MAIN, applyNode, eventually, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';

const NS = 'install-ns';
const SA = 'blockipam-plugin';
const NODE = 'in-1';
let podUID: string;
let dir: string;
let agent: AgentProcess | undefined;

function apply(object: unknown): void {
  const r = kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
  assert.equal(r.status, 0, r.stderr);
}

/** Who the token in `kubeconfig` is (SelfSubjectReview), or the HTTP error. */
async function whoami(kubeconfig: string): Promise<{ username: string; extra: Record<string, string[]> }> {
  const api = new KubeTransport(loadKubeconfig(kubeconfig));
  try {
    const review = await api.request<{
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return { username: review.status.userInfo.username, extra: review.status.userInfo.extra ?? {} };
  } finally {
    api.close();
  }
}

const tokenOf = (kubeconfig: string): string =>
  (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]?.user
    .token ?? '';

describe('agent install mode', () => {
  before(() => {
    installCrds();
    applyNode(NODE);
    apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA, namespace: NS } });
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'agent-pod', namespace: NS },
      spec: { nodeName: NODE, serviceAccountName: SA, containers: [{ name: 'agent', image: 'busybox' }] },
    });
    podUID = kubectl(['get', 'pod', 'agent-pod', '-n', NS, '-o', 'jsonpath={.metadata.uid}']).stdout;
    assert.match(podUID, /^[0-9a-f-]{36}$/);
    dir = mkdtempSync(join(tmpdir(), 'install-'));
    writeFileSync(join(dir, 'plugin-source'), '#!/bin/sh\necho fake plugin\n');
  });
  after(async () => {
    await agent?.kill();
    kubectl(['delete', 'namespace', NS, '--wait=false']);
    kubectl(['delete', 'pod', '--all', '-n', NS, '--grace-period=0', '--force']);
    kubectl(['delete', 'node', NODE]);
  });

  const installArgs = (): string[] => [
    '--cni-bin-dir',
    join(dir, 'bin'),
    '--cni-conf-dir',
    join(dir, 'net.d'),
    '--plugin-binary',
    join(dir, 'plugin-source'),
    '--plugin-kubeconfig',
    join(dir, 'net.d', 'blockipam-kubeconfig'),
    '--service-account',
    SA,
    '--namespace',
    NS,
    '--mtu',
    '1400',
    '--token-expiration-seconds',
    '600',
  ];

  test('install (once): files, contents and modes', () => {
    const r = spawnSync(
      process.execPath,
      [
        AGENT_MAIN,
        'install',
        '--node-name',
        NODE,
        '--kubeconfig',
        controlPlane().adminKubeconfig,
        '--no-portmap',
        ...installArgs(),
      ],
      { encoding: 'utf8', env: { ...process.env, POD_NAME: 'agent-pod', POD_UID: podUID } },
    );
    assert.equal(r.status, 0, r.stderr);
    const bin = join(dir, 'bin', 'blockipam');
    assert.equal(readFileSync(bin, 'utf8'), readFileSync(join(dir, 'plugin-source'), 'utf8'));
    assert.equal(statSync(bin).mode & 0o777, 0o755);
    const conflist = join(dir, 'net.d', '10-blockipam.conflist');
    assert.equal(statSync(conflist).mode & 0o777, 0o644);
    const doc = JSON.parse(readFileSync(conflist, 'utf8')) as {
      cniVersion: string;
      plugins: Record<string, unknown>[];
    };
    assert.equal(doc.cniVersion, '1.1.0');
    assert.deepEqual(
      doc.plugins.map((p) => p.type),
      ['ptp'],
      '--no-portmap drops portmap',
    );
    assert.deepEqual(doc.plugins[0], {
      type: 'ptp',
      ipMasq: false,
      mtu: 1400,
      capabilities: { 'io.kubernetes.cri.pod-annotations': true },
      ipam: { type: 'blockipam', kubeconfig: join(dir, 'net.d', 'blockipam-kubeconfig'), nodeName: NODE },
    });
    assert.equal(statSync(join(dir, 'net.d', 'blockipam-kubeconfig')).mode & 0o777, 0o600);
  });

  test('the token is bound to the agent pod, refreshed on schedule, and refused once the pod is gone', async () => {
    agent = startAgentWithPod();
    const kubeconfig = join(dir, 'net.d', 'blockipam-kubeconfig');
    await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
    const first = tokenOf(kubeconfig);
    const who = await whoami(kubeconfig);
    assert.equal(who.username, `system:serviceaccount:${NS}:${SA}`);
    assert.deepEqual(who.extra['authentication.kubernetes.io/pod-name'], ['agent-pod']);
    assert.deepEqual(who.extra['authentication.kubernetes.io/pod-uid'], [podUID]);
    assert.deepEqual(who.extra['authentication.kubernetes.io/node-name'], [NODE]);
    const second = await eventually('a refreshed token', () => {
      const t = tokenOf(kubeconfig);
      return t !== first ? t : undefined;
    });
    assert.notEqual(second, first);
    assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
    assert.equal((await whoami(kubeconfig)).username, `system:serviceaccount:${NS}:${SA}`);
    await agent.kill();
    agent = undefined;
    kubectl(['delete', 'pod', 'agent-pod', '-n', NS, '--grace-period=0', '--force']);
    await eventually('the token refused after the pod is deleted', async () => {
      try {
        await whoami(kubeconfig);
        return undefined;
      } catch (error) {
        return /401|Unauthorized/i.test(String(error)) ? true : undefined;
      }
    });
  });

  function startAgentWithPod(): AgentProcess {
    return startAgent(
      NODE,
      ['--install-cni', '--node-cache-file', '', '--token-refresh-seconds', '2', ...installArgs()],
      { POD_NAME: 'agent-pod', POD_UID: podUID },
    );
  }
});

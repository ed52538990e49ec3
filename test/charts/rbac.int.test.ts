/**
 * The chart's least privilege on the real API server: its ServiceAccounts, ClusterRoles,
 * bindings and ValidatingAdmissionPolicies (rendered by Helm, applied as they are), then each
 * identity tries what it must not do and the answer — RBAC's 403 or the policy's message — is
 * asserted. The node credential is a TokenRequest token bound to a Pod object scheduled on a
 * node (spec.nodeName), as the agent's own token and the plugin's are: it carries the node's
 * name (asserted with `kubectl auth whoami`). No kubelet is needed: the pods never run.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import type { KubectlResult } from '../helpers/control-plane.ts';
import { nodeLabel } from 'blockipam/core';
import { installCrds } from '../helpers/crds.ts';
import { render } from './helm.ts';

const NS = 'chart-rbac';
const RELEASE = 'rbac'; // objects: rbac-blockipam-*
const NODE_SA = 'rbac-blockipam-node';
const CONTROLLER_SA = 'rbac-blockipam-controller';
const NODES = ['rbac-n1', 'rbac-n2'] as const;
const POOL = 'rbac-pool';
const dir = mkdtempSync(join(tmpdir(), 'chart-rbac-'));
const uids: Record<string, string> = {};
let seq = 0;

const admin = (args: string[], input?: unknown): KubectlResult =>
  kubectl(args, input === undefined ? {} : { input: JSON.stringify(input) });
function adminOk(args: string[], input?: unknown): string {
  const r = admin(args, input);
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A kubeconfig holding `token` (the API server's own CA). */
function kubeconfigFor(name: string, token: string): string {
  const cp = controlPlane();
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'cp', cluster: { server: cp.apiUrl, 'certificate-authority': cp.caFile } }],
      users: [{ name, user: { token } }],
      contexts: [{ name, context: { cluster: 'cp', user: name } }],
      'current-context': name,
    }),
  );
  return file;
}

/** A token of `sa` (bound to `pod` when given) in a kubeconfig. */
function credential(sa: string, pod?: string): string {
  const bound = pod
    ? ['--bound-object-kind', 'Pod', '--bound-object-name', pod, '--bound-object-uid', uids[pod] ?? '']
    : [];
  const token = adminOk(['create', 'token', sa, '-n', NS, '--duration', '1h', ...bound]).trim();
  return kubeconfigFor(`${sa}-${pod ?? 'unbound'}`, token);
}

const as = (kubeconfig: string, args: string[], input?: unknown): KubectlResult =>
  kubectl(args, { kubeconfig, ...(input === undefined ? {} : { input: JSON.stringify(input) }) });

function refused(r: KubectlResult, message: RegExp, what: string): void {
  assert.notEqual(r.status, 0, `${what} was allowed: ${r.stdout}`);
  assert.match(r.stderr, message, what);
}
function allowed(r: KubectlResult, what: string): void {
  assert.equal(r.status, 0, `${what}: ${r.stderr}`);
}

const forbidden = (sa: string, verb: string, resource: string): RegExp =>
  new RegExp(`User "system:serviceaccount:${NS}:${sa}" cannot ${verb} resource "${resource}"`);

/** An IPAMBlock of POOL with allocations {ordinal: node} (and extra labels). */
function block(
  cidr: string,
  affinity: string | null,
  allocations: Record<number, string> = {},
  labels: Record<string, string> = {},
): object {
  const now = new Date().toISOString();
  return {
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    kind: 'IPAMBlock',
    metadata: { name: cidr.replace(/[.:/]/g, '-'), labels: { 'ipam.blockipam.io/pool': POOL, ...labels } },
    spec: {
      cidr,
      affinity,
      affinityClaimTime: now,
      sequence: 100 + ++seq,
      allocations: Object.fromEntries(
        Object.entries(allocations).map(([ordinal, node]) => [
          ordinal,
          // fixed fields: the same allocation written again is unchanged
          {
            handle: `rbac.${node}.${ordinal}`,
            node,
            allocatedAt: '2026-12-01T00:00:00Z',
            sequence: 1 + Number(ordinal),
          },
        ]),
      ),
      freed: [],
    },
  };
}

async function eventually(check: () => void, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`, { cause: error });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

describe('the chart’s RBAC and admission policy', () => {
  let node1: string; // the node ServiceAccount, token bound to the agent pod on rbac-n1
  before(() => {
    installCrds();
    const objects = render(4, [RELEASE, '--namespace', NS, '--set-json', 'pools=[]']).filter(
      (o) => !['DaemonSet', 'Deployment', 'IPAMConfig', 'PodDisruptionBudget'].includes(o.kind),
    );
    adminOk(['create', 'namespace', NS]);
    adminOk(['apply', '-f', '-'], { apiVersion: 'v1', kind: 'List', items: objects });
    adminOk(['create', 'serviceaccount', 'reader', '-n', NS]);
    adminOk([
      'create',
      'clusterrolebinding',
      'rbac-reader',
      '--clusterrole',
      'rbac-blockipam-reader',
      `--serviceaccount=${NS}:reader`,
    ]);
    for (const node of NODES)
      adminOk(['apply', '-f', '-'], { apiVersion: 'v1', kind: 'Node', metadata: { name: node } });
    const pods: [string, string, string][] = [
      ['agent-1', NODE_SA, NODES[0]],
      ['agent-2', NODE_SA, NODES[1]],
      ['controller', CONTROLLER_SA, NODES[0]],
    ];
    for (const [name, sa, node] of pods) {
      adminOk(['apply', '-f', '-'], {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS },
        spec: { nodeName: node, serviceAccountName: sa, containers: [{ name: 'c', image: 'none' }] },
      });
      uids[name] = adminOk(['get', 'pod', name, '-n', NS, '-o', 'jsonpath={.metadata.uid}']);
    }
    adminOk(['apply', '-f', '-'], {
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: POOL },
      spec: { cidr: '10.77.0.0/16' },
    });
    node1 = credential(NODE_SA, 'agent-1');
  });
  after(() => {
    admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
    admin(['delete', 'ippool', POOL]);
    admin(['delete', 'pods', '--all', '-n', NS, '--grace-period=0', '--force']);
    admin(['delete', 'namespace', NS, '--wait=false']);
    admin(['delete', 'clusterrolebinding', 'rbac-reader']);
    admin([
      'delete',
      'clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings',
      '-l',
      `app.kubernetes.io/instance=${RELEASE}`,
    ]);
    for (const node of NODES) admin(['delete', 'node', node]);
  });

  test('a token bound to a pod with spec.nodeName carries the node name; kubectl create token’s does not', () => {
    const who = JSON.parse(as(node1, ['auth', 'whoami', '-o', 'json']).stdout) as {
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    };
    assert.equal(who.status.userInfo.username, `system:serviceaccount:${NS}:${NODE_SA}`);
    assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], [NODES[0]]);
    const plain = JSON.parse(as(credential(NODE_SA), ['auth', 'whoami', '-o', 'json']).stdout) as {
      status: { userInfo: { extra?: Record<string, string[]> } };
    };
    assert.equal(plain.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], undefined);
  });

  test('RBAC: no identity reads Secrets or edits IPPools; the reader only reads', () => {
    const controller = credential(CONTROLLER_SA, 'controller');
    const reader = kubeconfigFor('reader', adminOk(['create', 'token', 'reader', '-n', NS]).trim());
    for (const [sa, kc] of [
      [NODE_SA, node1],
      [CONTROLLER_SA, controller],
      ['reader', reader],
    ] as const) {
      refused(
        as(kc, ['get', 'secrets', '-n', 'kube-system']),
        forbidden(sa, 'list', 'secrets'),
        `${sa} lists Secrets`,
      );
      refused(
        as(kc, ['patch', 'ippool', POOL, '--type=merge', '-p', '{"spec":{"disabled":true}}']),
        // kubectl GETs first: an identity that may not read pools is refused there
        forbidden(sa, '(get|patch)', 'ippools'),
        `${sa} edits an IPPool`,
      );
      refused(
        as(kc, ['delete', 'ippool', POOL]),
        forbidden(sa, 'delete', 'ippools'),
        `${sa} deletes an IPPool`,
      );
    }
    allowed(
      as(reader, ['get', 'ipamblocks,ippools,ipamconfigs,ipreservations,nodes,pods', '-A']),
      'the reader reads',
    );
    refused(
      as(reader, ['create', '-f', '-'], block('10.77.9.0/26', null)),
      forbidden('reader', 'create', 'ipamblocks'),
      'the reader writes',
    );
    refused(
      as(node1, ['delete', 'nodes', NODES[1]]),
      forbidden(NODE_SA, 'delete', 'nodes'),
      'the node deletes a Node',
    );
    refused(
      as(controller, ['create', 'token', NODE_SA, '-n', NS]),
      forbidden(CONTROLLER_SA, 'create', 'serviceaccounts/token'),
      'the controller mints a node token',
    );
  });

  test('the policy: a node writes its own blocks, borrows only its own allocations, never another node’s block', async () => {
    const other = '10.77.1.0/26';
    // effective ~1 s after the binding: until then the probe may pass — undo it and retry
    await eventually(() => {
      const r = as(node1, ['create', '-f', '-'], block(other, NODES[1]));
      if (r.status === 0) admin(['delete', 'ipamblock', '10-77-1-0-26']);
      refused(
        r,
        /blockipam: node rbac-n1 may change a block's affinity only between itself and none; IPAMBlock 10-77-1-0-26 would go from none to rbac-n2/,
        'claim for another node',
      );
    }, 'the policy takes effect');

    const own = block('10.77.0.0/26', NODES[0], { 0: NODES[0] });
    allowed(as(node1, ['create', '-f', '-'], own), 'claim its own block');
    allowed(
      as(node1, ['replace', '-f', '-'], block('10.77.0.0/26', NODES[0], { 0: NODES[0], 1: NODES[1] })),
      'anything in its own block',
    );
    allowed(
      as(node1, ['replace', '-f', '-'], block('10.77.0.0/26', null, { 1: NODES[1] })),
      'release its own block (affinity → none)',
    );
    allowed(
      as(node1, ['replace', '-f', '-'], block('10.77.0.0/26', NODES[0], { 1: NODES[1] })),
      'claim an unowned block, leaving others’ allocations alone',
    );

    // another node's block: borrowing
    adminOk(['create', '-f', '-'], block(other, NODES[1], { 0: NODES[1] }));
    const borrowed = { 0: NODES[1], 5: NODES[0] };
    // the labels core derives from the allocations (core/block/labels.ts): borrowing adds the
    // borrower's node label "borrowed" (found by the fresh-user review: every borrow was refused)
    const ownerLabel = { [nodeLabel(NODES[1])]: 'affine' };
    const borrowerLabel = { [nodeLabel(NODES[0])]: 'borrowed' };
    adminOk(['replace', '-f', '-'], block(other, NODES[1], { 0: NODES[1] }, ownerLabel));
    allowed(
      as(
        node1,
        ['replace', '-f', '-'],
        block(other, NODES[1], borrowed, { ...ownerLabel, ...borrowerLabel }),
      ),
      'borrow: add its own allocation and its node label "borrowed"',
    );
    refused(
      as(node1, ['replace', '-f', '-'], block(other, NODES[1], borrowed, borrowerLabel)),
      /may not change the labels of IPAMBlock 10-77-1-0-26 \(affine to rbac-n2\) other than a node label "borrowed".*changed: node\.ipam\.blockipam\.io\//,
      'drop the owner’s node label',
    );
    refused(
      as(
        node1,
        ['replace', '-f', '-'],
        block(other, NODES[1], borrowed, {
          ...ownerLabel,
          ...borrowerLabel,
          'ipam.blockipam.io/pool': 'elsewhere',
        }),
      ),
      /changed: ipam\.blockipam\.io\/pool/,
      'move the block to another pool label',
    );

    refused(
      as(node1, ['replace', '-f', '-'], block(other, NODES[1], { ...borrowed, 6: NODES[1] })),
      /may add or remove only its own allocations in IPAMBlock 10-77-1-0-26 \(affine to rbac-n2\); ordinal\(s\) 6 belong to other nodes/,
      'add an allocation for another node',
    );
    refused(
      as(node1, ['replace', '-f', '-'], block(other, NODES[1], { 5: NODES[0] })),
      /ordinal\(s\) 0 belong to other nodes/,
      'remove the owner’s allocation',
    );
    refused(
      as(node1, ['replace', '-f', '-'], block(other, NODES[0], borrowed)),
      /would go from rbac-n2 to rbac-n1/,
      'take another node’s block',
    );
    refused(
      as(node1, ['replace', '-f', '-'], block(other, NODES[1], borrowed, { x: 'y' })),
      /may not change the labels of IPAMBlock 10-77-1-0-26/,
      'relabel another node’s block',
    );
    refused(
      as(node1, ['delete', 'ipamblock', '10-77-1-0-26']),
      /would go from rbac-n2 to none/,
      'delete another node’s block',
    );
    allowed(
      as(node1, ['replace', '-f', '-'], block(other, NODES[1], { 0: NODES[1] }, ownerLabel)),
      'release its borrowed address (and its node label "borrowed" goes)',
    );

    // the same ServiceAccount with a token that names no node writes nothing
    refused(
      as(credential(NODE_SA), ['create', '-f', '-'], block('10.77.2.0/26', NODES[0])),
      /may write IPAMBlocks only with a token that names its node/,
      'a token without a node name',
    );
    // the controller is not bound by the per-node policy (it releases any node's leaks)
    allowed(
      as(credential(CONTROLLER_SA, 'controller'), ['replace', '-f', '-'], block(other, NODES[1])),
      'the controller releases',
    );
  });

  test('the policy: a node credential mints tokens bound to its own pod only', () => {
    const mint = (pod?: string): KubectlResult =>
      as(node1, [
        'create',
        'token',
        NODE_SA,
        '-n',
        NS,
        ...(pod
          ? ['--bound-object-kind', 'Pod', '--bound-object-name', pod, '--bound-object-uid', uids[pod] ?? '']
          : []),
      ]);
    allowed(mint('agent-1'), 'a token bound to its own pod (the plugin’s)');
    refused(
      mint('agent-2'),
      /may request tokens only bound to its own pod agent-1/,
      'a token bound to another node’s agent',
    );
    refused(mint(), /may request tokens only bound to its own pod/, 'an unbound token');
  });
});

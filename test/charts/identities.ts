/**
 * The chart's identities on the real API server, for the RBAC and admission-policy tests: the
 * chart rendered by Helm and applied as it is (workloads left out: no kubelet runs them), Pod
 * objects scheduled on fake nodes (spec.nodeName) that tokens are bound to — a token bound to
 * such a pod carries the node's name, as the agent's own does — Node-bound tokens of the plugin
 * ServiceAccount, as the agent mints for the plugin, and kubectl as any of them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import type { KubectlResult } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { claimPoolsData } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import { render } from './helm.ts';

export type { KubectlResult };

export const admin = (args: string[], input?: unknown): KubectlResult =>
  kubectl(args, input === undefined ? {} : { input: JSON.stringify(input) });

export function adminOk(args: string[], input?: unknown): string {
  const r = admin(args, input);
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export const as = (kubeconfig: string, args: string[], input?: unknown): KubectlResult =>
  kubectl(args, { kubeconfig, ...(input === undefined ? {} : { input: JSON.stringify(input) }) });

export function refused(r: KubectlResult, message: RegExp, what: string): void {
  assert.notEqual(r.status, 0, `${what} was allowed: ${r.stdout}`);
  assert.match(r.stderr, message, what);
}

export function allowed(r: KubectlResult, what: string): void {
  assert.equal(r.status, 0, `${what}: ${r.stderr}`);
}

/** One installed release: its namespace, and credentials of its ServiceAccounts. */
export class ChartIdentities {
  readonly dir = mkdtempSync(join(tmpdir(), 'chart-identities-'));
  /** metadata.uid of the pods and the nodes {@link install} made, by name. */
  readonly uids: Record<string, string> = {};
  readonly nodeSA: string;
  readonly pluginSA: string;
  readonly controllerSA: string;

  readonly namespace: string;
  readonly release: string;

  constructor(namespace: string, release: string) {
    this.namespace = namespace;
    this.release = release;
    this.nodeSA = `${release}-blockipam-node`;
    this.pluginSA = `${release}-blockipam-plugin`;
    this.controllerSA = `${release}-blockipam-controller`;
  }

  /** Installs the CRDs and the rendered chart (no workloads, no pools), the nodes and the pods. */
  install(
    nodes: readonly string[],
    pods: readonly (readonly [pod: string, sa: string, node: string])[],
  ): void {
    installCrds();
    const objects = render(4, [this.release, '--namespace', this.namespace, '--set-json', 'pools=[]']).filter(
      (o) => !['DaemonSet', 'Deployment', 'IPAMConfig', 'PodDisruptionBudget'].includes(o.kind),
    );
    adminOk(['create', 'namespace', this.namespace]);
    adminOk(['apply', '-f', '-'], { apiVersion: 'v1', kind: 'List', items: objects });
    for (const node of nodes) {
      adminOk(['apply', '-f', '-'], { apiVersion: 'v1', kind: 'Node', metadata: { name: node } });
      this.uids[node] = adminOk(['get', 'node', node, '-o', 'jsonpath={.metadata.uid}']);
    }
    for (const [name, sa, node] of pods) {
      adminOk(['apply', '-f', '-'], {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: this.namespace },
        spec: { nodeName: node, serviceAccountName: sa, containers: [{ name: 'c', image: 'none' }] },
      });
      this.uids[name] = adminOk(['get', 'pod', name, '-n', this.namespace, '-o', 'jsonpath={.metadata.uid}']);
    }
  }

  /**
   * Creates IPPool `name` of `cidr` and publishes it in the release's claim-pools ConfigMap, as the
   * controller would (test/charts/claims.int.test.ts runs the controller's own step).
   */
  usablePool(name: string, cidr: string): void {
    adminOk(['apply', '-f', '-'], {
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name },
      spec: { cidr },
    });
    const pool = JSON.parse(adminOk(['get', 'ippool', name, '-o', 'json'])) as IPPool;
    adminOk([
      ...[
        'patch',
        'configmap',
        `${this.release}-blockipam-claim-pools`,
        '-n',
        this.namespace,
        '--type=merge',
      ],
      ...['-p', JSON.stringify({ data: claimPoolsData([pool]) })],
    ]);
  }

  /** Removes what {@link install} made (the CRDs stay: other files share them). */
  uninstall(nodes: readonly string[]): void {
    admin(['delete', 'pods', '--all', '-n', this.namespace, '--grace-period=0', '--force']);
    admin(['delete', 'namespace', this.namespace, '--wait=false']);
    admin([
      'delete',
      'clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings',
      '-l',
      `app.kubernetes.io/instance=${this.release}`,
    ]);
    for (const node of nodes) admin(['delete', 'node', node]);
  }

  /** A kubeconfig file holding `token` (the API server's own CA). */
  kubeconfigFor(name: string, token: string): string {
    const cp = controlPlane();
    const file = join(this.dir, `${name}.kubeconfig`);
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

  /** A token of `sa` (bound to `pod` when given), in a kubeconfig file. */
  credential(sa: string, pod?: string): string {
    const bound = pod
      ? ['--bound-object-kind', 'Pod', '--bound-object-name', pod, '--bound-object-uid', this.uids[pod] ?? '']
      : [];
    const token = adminOk(['create', 'token', sa, '-n', this.namespace, '--duration', '1h', ...bound]).trim();
    return this.kubeconfigFor(`${sa}-${pod ?? 'unbound'}`, token);
  }

  /** A token of `sa` bound to Node `node` (as the agent mints the plugin's), in a kubeconfig file. */
  nodeCredential(sa: string, node: string): string {
    const token = adminOk([
      ...['create', 'token', sa, '-n', this.namespace, '--duration', '1h'],
      ...[
        '--bound-object-kind',
        'Node',
        '--bound-object-name',
        node,
        '--bound-object-uid',
        this.uids[node] ?? '',
      ],
    ]).trim();
    return this.kubeconfigFor(`${sa}-node-${node}`, token);
  }
}

/** Retries `check` until it passes (a policy or binding takes ~1 s to take effect). */
export async function eventually(check: () => void, what: string, timeoutMs = 30_000): Promise<void> {
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

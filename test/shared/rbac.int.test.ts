// The RBAC tables of docs/design-agent.md §RBAC and docs/design-controller.md §5 are exactly
// enough: each is parsed from the doc into a ClusterRole (scope "cluster") and a Role (scope
// "namespace …"), bound to a fresh ServiceAccount, and the real agent and controller processes
// run with that ServiceAccount's token against the real API server. They must do their work —
// the controller takes the lease, releases a leak, a deleted node's block and an unowned empty
// block, writes pool status and an Event; the agent pre-claims, releases an idle block, writes
// installs the plugin (TokenRequest bound to its Node) and, as its node's IPAM server, allocates
// for a pod it has not watched yet and releases it, and, its DaemonSet deleted (the uninstall
// signal, watched by name: a scope "…, name --owner-daemonset" row is a Role rule with that
// resourceName, as the chart's), removes its conflist — with no API error at all (a 403 would be
// counted in blockipam_api_errors_total and logged).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { IPAM_CONFIG_NAME } from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';
import type { KubeDatastore } from 'blockipam/core/kube';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import { applyNode, eventually, scrape, startAgent } from '../agent/agent-process.ts';
import { blockObject, cleanCluster, createNamespace, poolObject } from '../cli/cluster.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { answerDoc, askSocket, cniCall, socketConf } from '../helpers/ipam-socket.ts';
import { startController } from '../controller/helpers.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const id = randomBytes(3).toString('hex');
const NS = `rbac-${id}`;
let ds: KubeDatastore;
let dir: string;
const cleanups: (() => Promise<unknown>)[] = [];

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
/** The agent's DaemonSet (`--owner-daemonset`; an object only: no controller runs it). */
const OWNER = 'rb-agent';
interface Rules {
  cluster: Rule[];
  /** Each with the namespace its Role goes to. */
  namespaced: (Rule & { namespace: string })[];
}

/** The rows of the table under `heading` in `doc`: {cluster rules, namespaced rules}. */
function rbacTable(doc: string, heading: RegExp): Rules {
  const text = readFileSync(join(root, doc), 'utf8');
  const start = text.search(heading);
  assert.ok(start >= 0, `${doc}: no heading ${String(heading)}`);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('| group'));
  const rows: Rule[] = [];
  const namespaced: (Rule & { namespace: string })[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    const [group, resource, verbs, scope] = line
      .split('|')
      .slice(1, 5)
      .map((c) => c.trim().replace(/`/g, ''));
    const rule = {
      apiGroups: [group === '""' ? '' : (group ?? '')],
      resources: [resource ?? ''],
      verbs: (verbs ?? '').split(',').map((v) => v.trim()),
      ...(scope?.endsWith(', name --owner-daemonset') ? { resourceNames: [OWNER] } : {}),
    };
    if (scope === 'cluster') rows.push(rule);
    else {
      assert.match(scope ?? '', /^namespace /, `${doc}: scope of ${resource}`);
      // "namespace default" is that namespace; "namespace --some-flag" is the one the test passes (NS).
      namespaced.push({ ...rule, namespace: scope === 'namespace default' ? 'default' : NS });
    }
  }
  assert.ok(rows.length > 0, `${doc}: the RBAC table has rows`);
  return { cluster: rows, namespaced };
}

async function send(method: 'POST' | 'PUT', path: string, body: unknown): Promise<unknown> {
  return ds.transport.request(method, path, { body });
}

/** A ServiceAccount in NS bound to exactly `rules`; returns a kubeconfig holding its token. */
async function serviceAccount(name: string, rules: Rules): Promise<string> {
  const full = `${name}-${id}`;
  await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: full },
  });
  const subject = [{ kind: 'ServiceAccount', name: full, namespace: NS }];
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await send('POST', `${rbac}/clusterroles`, { metadata: { name: full }, rules: rules.cluster });
  await send('POST', `${rbac}/clusterrolebindings`, {
    metadata: { name: full },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: full },
    subjects: subject,
  });
  cleanups.push(
    () => ds.transport.request('DELETE', `${rbac}/clusterrolebindings/${full}`),
    () => ds.transport.request('DELETE', `${rbac}/clusterroles/${full}`),
  );
  for (const namespace of new Set(rules.namespaced.map((r) => r.namespace))) {
    const own = rules.namespaced
      .filter((r) => r.namespace === namespace)
      .map(({ apiGroups, resources, verbs, resourceNames }) => ({
        apiGroups,
        resources,
        verbs,
        ...(resourceNames ? { resourceNames } : {}),
      }));
    await send('POST', `${rbac}/namespaces/${namespace}/roles`, { metadata: { name: full }, rules: own });
    await send('POST', `${rbac}/namespaces/${namespace}/rolebindings`, {
      metadata: { name: full },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: full },
      subjects: subject,
    });
    cleanups.push(
      () => ds.transport.request('DELETE', `${rbac}/namespaces/${namespace}/rolebindings/${full}`),
      () => ds.transport.request('DELETE', `${rbac}/namespaces/${namespace}/roles/${full}`),
    );
  }
  const answer = (await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts/${full}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  })) as { status: { token: string } };
  const cp = controlPlane();
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cp.apiUrl, 'certificate-authority': cp.caFile } }],
      users: [{ name: full, user: { token: answer.status.token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: full } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  return file;
}

/**
 * One CNI call served whole by the agent over its socket (protocol v2): `command` for sandbox
 * rb-c1 of pod NS/rb-unwatched on node rb-n2, IPv4 only; the answer's exit code and CNI document.
 */
async function callAgent(
  socket: string,
  command: 'ADD' | 'DEL',
): Promise<{ code: unknown; doc: Record<string, unknown> | undefined }> {
  const answer = await askSocket(
    socket,
    cniCall(command, socketConf({ nodeName: 'rb-n2', timeoutMs: 20_000 }), {
      CNI_CONTAINERID: 'rb-c1',
      CNI_ARGS: `K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=rb-unwatched`,
    }),
  );
  return { code: answer.code, doc: answerDoc(answer) };
}

/** The sum of blockipam_api_errors_total and the lines mentioning a refusal. */
async function apiErrors(port: number, lines: Record<string, unknown>[]): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const samples = text.split('\n').filter((l) => /^blockipam_api_errors_total\{/.test(l) && !/ 0$/.test(l));
  // The timestamp is left out: "…T20:54:24.401Z" once matched 401.
  const refusals = lines
    .map(({ timestamp: _timestamp, ...fields }) => JSON.stringify(fields))
    .filter((text) => /forbidden|\b403\b|unauthori[sz]ed|\b401\b/i.test(text));
  return [...samples, ...refusals];
}

before(async () => {
  ds = adminDatastore();
  await cleanCluster(ds);
  await createNamespace(ds, NS);
  dir = mkdtempSync(join(tmpdir(), 'blockipam-rbac-'));
});
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await cleanCluster(ds, [NS]);
  for (const node of ['rb-n1', 'rb-n2'])
    await ds.transport.request('DELETE', `/api/v1/nodes/${node}`).catch(() => undefined);
  await ds.transport.request('DELETE', `/api/v1/namespaces/${NS}`).catch(() => undefined);
  ds.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('RBAC: the documented rules are enough', () => {
  test('the controller under exactly docs/design-controller.md §5', async () => {
    const kubeconfig = await serviceAccount(
      'controller',
      rbacTable('docs/design-controller.md', /^## 5\. RBAC/m),
    );
    applyNode('rb-n1');
    await ds.pools.create(poolObject('rb-p', '10.78.0.0/16'));
    await ds.configs.create({ metadata: { name: IPAM_CONFIG_NAME }, spec: { leakGracePeriodSeconds: 1 } });
    const leak = {
      ordinal: 2,
      handle: 'net.rb.eth0',
      node: 'rb-n1',
      namespace: NS,
      pod: 'gone',
      podUID: 'u',
    };
    await ds.blocks.create(
      blockObject({ cidr: '10.78.0.0/26', pool: 'rb-p', affinity: 'rb-n1', allocations: [leak] }),
    );
    await ds.blocks.create(blockObject({ cidr: '10.78.1.0/26', pool: 'rb-p', affinity: 'rb-deleted' }));
    await ds.blocks.create(blockObject({ cidr: '10.78.2.0/26', pool: 'rb-p', affinity: null }));
    // the chart creates it without data; the controller fills it
    await send('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'claim-pools' } });
    const controller = startController([
      ...[
        '--kubeconfig',
        kubeconfig,
        '--identity',
        `rb-${id}`,
        '--metrics-port',
        '0',
        '--metrics-host',
        '127.0.0.1',
      ],
      ...['--lease-namespace', NS, '--lease-name', 'blockipam-controller'],
      // the deleted node's blocks released at once, not after its quarantine
      ...['--node-gone-grace-seconds', '0'],
      ...['--lease-duration-seconds', '4', '--renew-deadline-seconds', '3', '--retry-period-seconds', '0.5'],
      ...['--resync-seconds', '1', '--debounce-ms', '100'],
      ...['--claim-pools-configmap', `${NS}/claim-pools`],
    ]);
    const { child, lines } = controller;
    try {
      await eventually(
        'the leak, the deleted node block and the unowned block released',
        async () => {
          const left = (await ds.blocks.list()).map((b) => [
            b.metadata.name,
            Object.keys(b.spec.allocations).length,
          ]);
          return JSON.stringify(left) === JSON.stringify([['10-78-0-0-26', 0]]) ? true : undefined;
        },
        60_000,
      );
      await eventually('the claimable pools published', async () => {
        const map = await ds.transport.request<{ data?: Record<string, string> }>(
          'GET',
          `/api/v1/namespaces/${NS}/configmaps/claim-pools`,
        );
        return map.data?.['rb-p'] === '10.78.0.0/16 26 usable' ? true : undefined;
      });
      await eventually('pool status written', async () =>
        (await ds.pools.get('rb-p'))?.status?.blockSize === 26 ? true : undefined,
      );
      const port = await controller.port;
      assert.deepEqual(await apiErrors(port, lines), [], 'no request was refused');
      await eventually('an Event of this controller in namespace default', async () => {
        const list = await ds.transport.request<{ items: { reportingInstance?: string }[] }>(
          'GET',
          '/apis/events.k8s.io/v1/namespaces/default/events',
        );
        return list.items.some((e) => e.reportingInstance === `rb-${id}`) ? true : undefined;
      });
      const lease = await ds.transport.request<{ spec: { holderIdentity: string } }>(
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/blockipam-controller`,
      );
      assert.equal(lease.spec.holderIdentity, `rb-${id}`);
      assert.deepEqual(await apiErrors(port, lines), [], 'no request was refused');
    } catch (error) {
      console.log(
        lines
          .filter((l) => l.level !== 'debug')
          .map((l) => JSON.stringify(l))
          .join('\n'),
      );
      throw error;
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    // SIGTERM released the lease (UPDATE allowed).
    const released = await ds.transport.request<{ spec: { holderIdentity?: string } }>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/blockipam-controller`,
    );
    assert.equal(released.spec.holderIdentity ?? '', '');
  });

  test('the agent under exactly docs/design-agent.md §RBAC (install mode included)', async () => {
    await cleanCluster(ds);
    const kubeconfig = await serviceAccount('agent', rbacTable('docs/design-agent.md', /^## RBAC/m));
    // The plugin's own ServiceAccount, whose token the agent requests bound to its Node (rb-n2).
    await send('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'plugin' },
    });
    applyNode('rb-n2');
    await ds.pools.create(poolObject('rb-p4', '10.79.0.0/16'));
    await ds.pools.create(poolObject('rb-p6', 'fd00:79::/64'));
    // Two idle IPv4 blocks (empty since 1970): one goes, the last of the family stays.
    await ds.blocks.create(blockObject({ cidr: '10.79.0.0/26', pool: 'rb-p4', affinity: 'rb-n2' }));
    await ds.blocks.create(blockObject({ cidr: '10.79.0.64/26', pool: 'rb-p4', affinity: 'rb-n2' }));
    writeFileSync(join(dir, 'plugin-source'), '#!/bin/sh\necho plugin\n');
    const labels = { app: OWNER };
    await send('POST', `/apis/apps/v1/namespaces/${NS}/daemonsets`, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: OWNER },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
      },
    });
    const socket = join(dir, 'agent', 'ipam.sock');
    const agent = startAgent('rb-n2', [
      ...['--install-cni', '--cni-bin-dir', join(dir, 'bin'), '--cni-conf-dir', join(dir, 'net.d')],
      ...[
        '--plugin-binary',
        join(dir, 'plugin-source'),
        '--plugin-kubeconfig',
        join(dir, 'net.d', 'blockipam.kubeconfig'),
      ],
      ...['--service-account', 'plugin', '--namespace', NS, '--kubeconfig', kubeconfig],
      ...['--ipam-socket', socket, '--owner-daemonset', OWNER],
    ]);
    try {
      await eventually(
        'an IPv6 block claimed and one idle IPv4 block released',
        async () => {
          const blocks = (await ds.blocks.list())
            .filter((b) => b.spec.affinity === 'rb-n2')
            .map((b) => b.spec.cidr);
          const v4 = blocks.filter((c) => !c.includes(':'));
          return v4.length === 1 && blocks.some((c) => c.startsWith('fd00:79:')) ? blocks : undefined;
        },
        60_000,
      );
      await agent.waitFor((l) => l.message === 'conflist written', 'conflist written');
      const pluginKubeconfig = JSON.parse(
        readFileSync(join(dir, 'net.d', 'blockipam.kubeconfig'), 'utf8'),
      ) as {
        users: { user: { token: string } }[];
      };
      assert.ok((pluginKubeconfig.users[0]?.user.token ?? '').length > 20, 'a TokenRequest token');
      const plugin = new KubeTransport(loadKubeconfig(join(dir, 'net.d', 'blockipam.kubeconfig')));
      try {
        const review = await plugin.request<{
          status: { userInfo: { username: string; extra?: Record<string, string[]> } };
        }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        });
        assert.equal(review.status.userInfo.username, `system:serviceaccount:${NS}:plugin`);
        assert.deepEqual(review.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], ['rb-n2']);
      } finally {
        plugin.close();
      }
      assert.equal((await scrape(agent, '/readyz')).status, 200);
      // the IPAM server: an ADD for a pod it has not watched (one GET of the pod, then the block
      // UPDATE), and its DEL
      const added = await callAgent(socket, 'ADD');
      assert.equal(added.code, 0, JSON.stringify(added));
      const ips = (added.doc?.ips ?? []) as { address: string }[];
      assert.equal(ips.length, 1, JSON.stringify(added));
      assert.match(ips[0]?.address ?? '', /^10\.79\./, JSON.stringify(added));
      const stored = async (): Promise<string[]> =>
        (await ds.blocks.list()).flatMap((b) =>
          Object.values(b.spec.allocations).flatMap((a) => (a.handle.includes('.rb-c1.') ? [a.handle] : [])),
        );
      // the pod does not exist: the GET's 404 leaves the allocation without a pod reference
      assert.deepEqual(await stored(), ['n.rb-c1.eth0'], 'the allocation stored');
      const released = await callAgent(socket, 'DEL');
      assert.deepEqual(released, { code: 0, doc: undefined });
      assert.deepEqual(await stored(), [], 'the allocation released');
      await ds.transport.request('DELETE', `/apis/apps/v1/namespaces/${NS}/daemonsets/${OWNER}`);
      await agent.waitFor(
        (l) => l.message === 'conflist and plugin kubeconfig removed',
        'the conflist removed once its DaemonSet is deleted',
      );
      assert.deepEqual(await apiErrors(await agent.port(), agent.lines), [], 'no request was refused');
    } catch (error) {
      console.log(
        agent.lines
          .filter((l) => l.level !== 'debug')
          .map((l) => JSON.stringify(l))
          .join('\n'),
      );
      throw error;
    } finally {
      await agent.kill();
    }
  });
});

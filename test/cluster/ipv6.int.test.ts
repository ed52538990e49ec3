/**
 * IPv6 on the real 3-node cluster, blockipam installed by the chart with an IPv4 and an IPv6 pool
 * (dual-stack pods; docs/install.md §IPv6 and dual-stack):
 *
 * - on the run's cluster, whose nodes have only IPv4 InternalIPs: the agents cannot route the
 *   other nodes' IPv6 blocks, and say why where an operator looks — the gauge
 *   `blockipam_agent_routes_skipped{family="6",reason="no-internal-ip"}` on each agent's /metrics,
 *   the agent's `routes skipped: node … has no IPv6 InternalIP` log line, and `ipamctl show --node`;
 * - on a cluster of its own started with dual-stack node addresses (test/cluster/up.sh --ipv6,
 *   nodes fd00:99::11… beside 10.99.0.11…): nothing is skipped, each agent routes the other
 *   nodes' IPv6 blocks via their IPv6 InternalIPs, a pod on node-1 pings a pod on node-2 over IPv6
 *   and is seen there with its own IPv6 address, and reaches the control-plane host over IPv6
 *   (fd00:99::1, no route to the pools) seen with node-1's IPv6 address: masqueraded only when
 *   leaving the pools, as egress.int.test.ts shows for IPv4.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cluster, inNode, kubectl, kubectlOk, startOwnCluster } from '../helpers/cluster.ts';
import { busybox, ipamctl, pods, waitFor, type PodObject } from './blockipam.ts';
import { installWithPluginLog, NAMESPACE, setUpChart, tearDownChart, waitRolledOut } from './chart.ts';
import { AGENT_METRICS_PORT, pick, scrape } from './metrics.ts';

const ns = 'bipam-ipv6';
const PORT = 18081;
const V6_POOL = 'fd00:10:244::/56';
const ctl = join(fileURLToPath(new URL('.', import.meta.url)), 'ctl.sh');
/** The chart's pools: one of each family (every pod gets an IPv4 and an IPv6 address). */
const DUAL_STACK = [
  'pools[0].name=default-ipv4',
  'pools[0].cidr=10.244.0.0/16',
  'pools[0].blockSize=26',
  'pools[1].name=default-ipv6',
  `pools[1].cidr=${V6_POOL}`,
  'pools[1].blockSize=122',
];

/** What a part of this file must undo, last first (also when a test fails half-way). */
const undo: (() => void | Promise<void>)[] = [];
after(async () => {
  for (const step of undo.reverse()) await step();
});

function install(): void {
  const image = setUpChart(ns);
  undo.push(() => tearDownChart(ns));
  installWithPluginLog(image, { set: DUAL_STACK });
  waitRolledOut();
}

/** `blockipam_agent_routes_skipped{family="6",reason="no-internal-ip"}` of the agent on node `i`. */
function skipped6(i: number): number | undefined {
  const samples = scrape(cluster().nodeIps[i] ?? '', AGENT_METRICS_PORT);
  const found = pick(samples, 'blockipam_agent_routes_skipped', { family: '6', reason: 'no-internal-ip' });
  return found.length === 0 ? undefined : found.reduce((a, s) => a + s.value, 0);
}

/** The IPAMBlocks of the IPv6 pool, by affinity. */
function v6Blocks(): { name: string; cidr: string; affinity: string | null }[] {
  const list = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
    items: { metadata: { name: string }; spec: { cidr: string; affinity: string | null } }[];
  };
  return list.items
    .filter((b) => b.spec.cidr.includes(':'))
    .map((b) => ({ name: b.metadata.name, cidr: b.spec.cidr, affinity: b.spec.affinity }));
}

test('without IPv6 InternalIPs: each agent skips the other nodes’ IPv6 blocks and says why', async () => {
  install();
  const [n1, n2] = cluster().nodes as [string, string];
  const nodes = cluster().nodes;
  // every agent pre-claims an IPv6 block for its node (the pool is eligible everywhere)
  await waitFor(
    'an IPv6 block affine to each node',
    () => (nodes.every((n) => v6Blocks().some((b) => b.affinity === n)) ? true : undefined),
    180_000,
  );
  // the gauge: each agent skips the other nodes' IPv6 blocks (at least one each)
  const counts = await waitFor(
    'every agent’s routes_skipped{family="6",reason="no-internal-ip"} ≥ 2',
    () => {
      const c = nodes.map((_, i) => skipped6(i));
      return c.every((v) => v !== undefined && v >= nodes.length - 1) ? c : undefined;
    },
    120_000,
    2000,
  );
  assert.equal(counts.length, nodes.length);
  // IPv4 is routed: no IPv4 skip on node-1
  const v4 = pick(scrape(cluster().nodeIps[0] ?? '', AGENT_METRICS_PORT), 'blockipam_agent_routes_skipped', {
    family: '4',
  });
  assert.ok(
    v4.every((s) => s.value === 0),
    `IPv4 routes skipped: ${JSON.stringify(v4)}`,
  );
  // node-1's agent log names node-2 and the missing family
  const agent = kubectlOk([
    '-n',
    NAMESPACE,
    'get',
    'pods',
    '-l',
    'app.kubernetes.io/component=agent',
    '--field-selector',
    `spec.nodeName=${n1}`,
    '-o',
    'jsonpath={.items[0].metadata.name}',
  ]);
  const logs = kubectlOk(['-n', NAMESPACE, 'logs', agent]);
  assert.match(logs, new RegExp(`routes skipped: node ${n2} has no IPv6 InternalIP`), logs.slice(-3000));
  // ipamctl show --node: node-2's IPv6 block, not routed, and why
  const block = v6Blocks().find((b) => b.affinity === n2);
  assert.ok(block);
  const show = await waitFor(
    `ipamctl show --node ${n2} listing ${block.name} as not routed`,
    () => {
      const r = ipamctl(['show', '--node', n2]);
      return r.stdout.includes(`${block.name} (${block.cidr}): node ${n2} has no IPv6 InternalIP`)
        ? r.stdout
        : undefined;
    },
    60_000,
    2000,
  );
  assert.match(
    show,
    new RegExp(`ROUTES from other nodes to ${n2}: next hops 10\\.99\\.0\\.12; \\d+ not routed`),
  );
  // and no agent routes it: node-1 holds no route to node-2's IPv6 block
  const routes = inNode(n1, 'ip', ['-6', 'route', 'show', 'proto', '210']);
  assert.ok(!routes.stdout.includes(block.cidr), routes.stdout);
  await undo.pop()?.();
});

/** Answers every request with the peer address it saw; exits when its stdin closes. */
const LISTENER = `
const server = require('node:http').createServer((req, res) => res.end(String(req.socket.remoteAddress)));
server.listen(${PORT}, 'fd00:99::1', () => console.log('listening'));
process.stdin.on('end', () => process.exit(0)).resume();`;
/** busybox httpd (both families) whose CGI answers with REMOTE_ADDR. */
const PEER_SERVER = [
  'sh',
  '-c',
  [
    'mkdir -p /tmp/w/cgi-bin',
    `printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho -n "$REMOTE_ADDR"\\n' > /tmp/w/cgi-bin/peer`,
    'chmod +x /tmp/w/cgi-bin/peer',
    'exec httpd -f -p 8080 -h /tmp/w',
  ].join(' && '),
];

function pinned(name: string, node: string, command: readonly string[]): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'ipv6' } },
    spec: { nodeName: node, terminationGracePeriodSeconds: 0, containers: [busybox(name, command)] },
  };
}

/** The pod's IPv6 address (status.podIPs). */
const v6Of = (p: PodObject): string | undefined =>
  (p.status as { podIPs?: { ip: string }[] }).podIPs?.map((x) => x.ip).find((ip) => ip.includes(':'));

let lastFailure = '';
/** HTTP GET with busybox nc from pod `from` → the body, or undefined (the caller polls). */
function fetchFrom(from: string, host: string, port: number, path = '/'): string | undefined {
  const request = `printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${host} ${port}`;
  const r = kubectl(['-n', ns, 'exec', from, '--', 'sh', '-c', request]);
  const body = r.stdout
    .split(/\r?\n\r?\n/)
    .slice(1)
    .join('\n\n')
    .trim();
  if (r.status === 0 && / 200 /.test(r.stdout.split('\n')[0] ?? '')) return body;
  lastFailure = `[${host}]:${port}${path}: exit ${r.status}: ${r.stdout}${r.stderr}`;
  return undefined;
}
const fetched = (from: string, host: string, port: number, path = '/'): Promise<string> =>
  waitFor(`an answer from [${host}]:${port}`, () => fetchFrom(from, host, port, path), 90_000, 1000).catch(
    (e: unknown) => {
      throw new Error(`${(e as Error).message}; last failure: ${lastFailure}`);
    },
  );

test('with IPv6 InternalIPs (up.sh --ipv6): routes, ping6 across nodes, IPv6 egress masqueraded only off the pools', async () => {
  const own = startOwnCluster({ ipv6: true });
  undo.push(() => assert.ok(own.stop(), 'the dual-stack cluster’s teardown found the host changed'));
  const [n1, n2] = own.cluster.nodes as [string, string];
  const [v6n1, v6n2] = own.cluster.nodeIpv6s as [string, string];
  assert.equal(v6n1, 'fd00:99::11');
  // the Nodes report both InternalIPs
  const addresses = JSON.parse(kubectlOk(['get', 'node', n1, '-o', 'jsonpath={.status.addresses}'])) as {
    type: string;
    address: string;
  }[];
  assert.deepEqual(
    addresses.filter((a) => a.type === 'InternalIP').map((a) => a.address),
    ['10.99.0.11', v6n1],
  );
  install();
  // its own process group: stopped whole (ctl.sh, nsenter, node) before the cluster goes
  const listener = spawn(
    'bash',
    [ctl, own.cluster.runDir, 'exec', 'cluster', process.execPath, '-e', LISTENER],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
    },
  );
  undo.push(() => stopListener(listener));
  let listening = false;
  for await (const line of createInterface({ input: listener.stdout as NodeJS.ReadableStream }))
    if (line === 'listening') {
      listening = true;
      break;
    }
  assert.ok(listening, 'the listener in the cluster namespace exited before listening');

  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinned('client', n1, ['sleep', '3600'])));
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinned('server', n2, PEER_SERVER)));
  const [client, server] = await waitFor(
    'the two pods Running with IPv6 addresses',
    () => {
      const ps = pods(ns, 'app=ipv6').filter((p) => p.status.phase === 'Running' && v6Of(p));
      const c = ps.find((p) => p.metadata.name === 'client');
      const s = ps.find((p) => p.metadata.name === 'server');
      return c && s ? ([c, s] as const) : undefined;
    },
    180_000,
  );
  const clientV6 = v6Of(client) ?? '';
  const serverV6 = v6Of(server) ?? '';
  // node-1 routes node-2's IPv6 block via node-2's IPv6 InternalIP
  const block = v6Blocks().find((b) => b.affinity === n2 && inV6Block(serverV6, b.cidr));
  assert.ok(block, `no IPv6 block of ${n2} holds ${serverV6}: ${JSON.stringify(v6Blocks())}`);
  await waitFor(
    `${n1}: a route to ${block.cidr} via ${v6n2}`,
    () => {
      const r = inNode(n1, 'ip', ['-6', 'route', 'show', 'proto', '210']);
      return r.stdout.includes(`${block.cidr} via ${v6n2}`) ? true : undefined;
    },
    60_000,
    1000,
  );
  // pod to pod across nodes over IPv6
  const ping = await waitFor(
    `ping from ${clientV6} to ${serverV6}`,
    () => {
      const r = kubectl(['-n', ns, 'exec', 'client', '--', 'ping', '-c', '1', '-W', '5', serverV6]);
      lastFailure = r.stdout + r.stderr;
      return r.status === 0 ? r.stdout : undefined;
    },
    60_000,
    1000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last: ${lastFailure}`);
  });
  assert.match(ping, /1 packets received/);
  // nothing skipped any more: every agent's IPv6 skip gauge is 0 or absent
  for (let i = 0; i < own.cluster.nodes.length; i++) assert.ok((skipped6(i) ?? 0) === 0, `node ${i + 1}`);
  // the server sees the client's own IPv6 address (no masquerade inside the pools)
  // httpd writes an IPv6 REMOTE_ADDR in brackets
  const peer = (await fetched('client', serverV6, 8080, '/cgi-bin/peer')).replace(/^\[(.*)\]$/, '$1');
  assert.equal(peer, clientV6, `the server pod saw ${peer}, not the client's ${clientV6}`);
  // leaving the pools (fd00:99::1 has no route to them): masqueraded to node-1's IPv6 address
  const seen = await fetched('client', 'fd00:99::1', PORT);
  assert.equal(seen, v6n1, `the control-plane host saw ${seen}, not node-1's ${v6n1}`);
  const table = inNode(n1, 'nft', ['list', 'table', 'inet', 'blockipam']);
  assert.match(table.stdout, /ip6 saddr @pods6 ip6 daddr != @exempt6 masquerade/);
});

/**
 * Ends the listener (its stdin closed: it exits) and waits for it, up to 30 s; then its process
 * group is killed — nothing of it may be left in the cluster namespace when the cluster's
 * teardown checks for leftovers.
 */
async function stopListener(listener: ChildProcess): Promise<void> {
  if (listener.exitCode !== null || listener.signalCode !== null) return;
  const exited = new Promise<boolean>((resolve) => {
    listener.once('exit', () => resolve(true));
    setTimeout(() => resolve(false), 30_000).unref();
  });
  listener.stdin?.end();
  if (!(await exited) && listener.pid !== undefined) process.kill(-listener.pid, 'SIGKILL');
}

/** True when IPv6 `ip` lies in `cidr` (a /122 or shorter: compared on the expanded groups). */
function inV6Block(ip: string, cidr: string): boolean {
  const [base, len] = cidr.split('/');
  const bits = (text: string): bigint => {
    const [head = '', tail = ''] = text.split('::');
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
    return groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n);
  };
  const shift = BigInt(128 - Number(len));
  return bits(ip) >> shift === bits(base ?? '') >> shift;
}

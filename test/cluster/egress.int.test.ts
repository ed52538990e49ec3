/**
 * Pod egress on the real 3-node cluster, blockipam installed by the chart with its defaults
 * (masquerade on): a pod reaches the control-plane host (the cluster namespace, 10.99.0.1, which
 * has no route to the pools) and is seen there with its node's address; a pod on another node
 * sees the first pod's own address; each agent keeps its table `inet blockipam` in its node's
 * namespace and re-creates it when it is deleted by hand. IPv4: the run's cluster has no IPv6
 * InternalIPs; IPv6 egress is ipv6.int.test.ts's, on a cluster started with up.sh --ipv6.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cluster, inNode, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { busybox, pods, waitFor, type PodObject } from './blockipam.ts';
import { installWithPluginLog, setUpChart, tearDownChart, waitRolledOut } from './chart.ts';

const ns = 'bipam-egress';
const PORT = 18080;
const ctl = join(fileURLToPath(new URL('.', import.meta.url)), 'ctl.sh');
/** Answers every request with the peer address it saw; exits when its stdin closes. */
const LISTENER = `
const server = require('node:http').createServer((req, res) =>
  res.end(String(req.socket.remoteAddress).replace(/^::ffff:/, '')));
server.listen(${PORT}, '10.99.0.1', () => console.log('listening'));
process.stdin.on('end', () => process.exit(0)).resume();`;
/** busybox httpd whose CGI answers with REMOTE_ADDR, on IPv4 only (no mapped addresses). */
const PEER_SERVER = [
  'sh',
  '-c',
  [
    'mkdir -p /tmp/w/cgi-bin',
    `printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho -n "$REMOTE_ADDR"\\n' > /tmp/w/cgi-bin/peer`,
    'chmod +x /tmp/w/cgi-bin/peer',
    'exec httpd -f -p 0.0.0.0:8080 -h /tmp/w',
  ].join(' && '),
];

let listener: ChildProcess | undefined;

before(async () => {
  const image = setUpChart(ns);
  installWithPluginLog(image);
  waitRolledOut();
  // the control-plane host side: a listener in the cluster namespace, on its bridge address
  listener = spawn('bash', [ctl, cluster().runDir, 'exec', 'cluster', process.execPath, '-e', LISTENER], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: listener.stdout as NodeJS.ReadableStream }))
    if (line === 'listening') return;
  throw new Error('the listener in the cluster namespace exited before listening');
});
after(() => {
  listener?.stdin?.end();
  tearDownChart(ns);
});

function pinned(name: string, node: string, command: readonly string[]): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'egress' } },
    spec: { nodeName: node, terminationGracePeriodSeconds: 0, containers: [busybox(name, command)] },
  };
}

/** The last failed fetch's output, for the failure message. */
let lastFailure = '';

/**
 * An HTTP GET from pod `from` to `host`:`port` `path` with busybox `nc` (busybox 1.35's `wget`
 * segfaults in these pods) → the body, or undefined when it failed (the caller polls).
 */
function fetchFrom(from: string, host: string, port: number, path = '/'): string | undefined {
  const request = `printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${host} ${port}`;
  const r = kubectl(['-n', ns, 'exec', from, '--', 'sh', '-c', request]);
  const body = r.stdout
    .split(/\r?\n\r?\n/)
    .slice(1)
    .join('\n\n')
    .trim();
  if (r.status === 0 && / 200 /.test(r.stdout.split('\n')[0] ?? '')) return body;
  lastFailure = `${host}:${port}${path}: exit ${r.status}: ${r.stdout}${r.stderr}`;
  return undefined;
}

/** Polls {@link fetchFrom} for up to 60 s; throws with the last failure. */
async function fetched(from: string, host: string, port: number, path = '/'): Promise<string> {
  try {
    return await waitFor(
      `an answer from ${host}:${port}`,
      () => fetchFrom(from, host, port, path),
      60_000,
      1_000,
    );
  } catch (error) {
    // what the packets did: node-1's connection tracking towards 10.99.0.1, the listeners
    const tracked = inNode(cluster().nodes[0] ?? '', 'grep', [
      '-F',
      'dst=10.99.0.1 ',
      '/proc/net/nf_conntrack',
    ]);
    const listening = inNode('cluster', 'ss', ['-ltnp']);
    throw new Error(
      `${(error as Error).message}; last failure: ${lastFailure}\nnode-1 conntrack:\n${tracked.stdout}\ncluster listeners:\n${listening.stdout}`,
      { cause: error },
    );
  }
}

let client: PodObject;
let server: PodObject;

test('a pod reaches the control-plane host with its node’s address; another node’s pod sees the pod’s own', async () => {
  const [n1, n2] = cluster().nodes as [string, string];
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinned('client', n1, ['sleep', '3600'])));
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinned('server', n2, PEER_SERVER)));
  [client, server] = await waitFor(
    'the two pods Running with addresses',
    () => {
      const ps = pods(ns, 'app=egress').filter((p) => p.status.phase === 'Running' && p.status.podIP);
      const c = ps.find((p) => p.metadata.name === 'client');
      const s = ps.find((p) => p.metadata.name === 'server');
      return c && s ? ([c, s] as const) : undefined;
    },
    180_000,
  );
  const n1Ip = cluster().nodeIps[0];
  // 10.99.0.1 knows no pool: only a masqueraded packet is answered
  const seen = await fetched('client', '10.99.0.1', PORT);
  assert.equal(seen, n1Ip, `the control-plane host saw ${seen}, not node-1's ${n1Ip}`);
  // across nodes, pod to pod: no masquerade (the server's httpd may still be starting: polled)
  const peer = await fetched('client', server.status.podIP ?? '', 8080, '/cgi-bin/peer');
  assert.equal(
    peer,
    client.status.podIP,
    `the server pod saw ${peer}, not the client's ${client.status.podIP}`,
  );
});

test('each agent keeps its table in its node’s namespace and re-creates it when deleted by hand', async () => {
  const list = (node: string): string | undefined => {
    const r = inNode(node, 'nft', ['list', 'table', 'inet', 'blockipam']);
    return r.status === 0 ? r.stdout : undefined;
  };
  for (const node of cluster().nodes)
    assert.match(
      list(node) ?? '',
      /ip saddr @pods4 ip daddr != @exempt4 masquerade/,
      `${node}: the rule is in the node's namespace`,
    );
  // the client's node: its egress depends on the table coming back
  const [n1] = cluster().nodes as [string];
  const del = inNode(n1, 'nft', ['delete', 'table', 'inet', 'blockipam']);
  assert.equal(del.status, 0, del.stderr);
  // the agent's repair pass (every 10 s) writes it back
  const back = await waitFor(`${n1}: the table back`, () => list(n1), 60_000, 1_000);
  assert.match(back, /elements = \{ 10\.244\.0\.0\/16 \}/);
  assert.equal(await fetched('client', '10.99.0.1', PORT), cluster().nodeIps[0]);
});

/**
 * End to end for the node agent's routes (issue 10 item 3), as root in namespaces created here:
 * three "node" namespaces on a bridge, dual-stack pods through ptp + blockipam, the real cluster
 * controller (block-controller/controller/main.ts: it writes every node's IPAMNode, the agents'
 * route source) and in every node the real node agent (block-controller/agent/main.ts with
 * `--routes`, on the real API server) programming that node's routes. Pods on different nodes
 * ping each other over IPv4 and IPv6; an address borrowed from another node's block is reachable
 * from every node; with its API server unreachable an agent turns not ready, and ready again once
 * it is back; an agent restarted while the API server is unreachable changes no route until it
 * has synced.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { addressTextAt, cidrContains, mustParseCidr, parseIP, type IP } from 'blockipam/core';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { fixture, type Fixture } from '../plugin/helpers/cluster.ts';
import { inNs, netnsPath, sh } from './harness/netns.ts';
import { startNodeAgent, type NodeAgent } from './harness/node-agent.ts';
import { createWorld, currentPtp, type World } from './harness/world.ts';

const tag = 'e2r';
// The current upstream ptp, which scripts/setup.sh builds; missing, createWorld fails the suite
// naming it (no skip, no quiet fallback to another build: test/helpers/tier.ts).
const ptp = currentPtp();
const v6Of = (i: number): string => `2001:db8::${11 + i}`;
const CONTROLLER_MAIN = fileURLToPath(new URL('../../block-controller/controller/main.ts', import.meta.url));

/** The real cluster controller on the host (admin credentials), 1 s resync, logs discarded. */
function startController(): ChildProcess {
  return spawn(
    process.execPath,
    [
      CONTROLLER_MAIN,
      ...['--kubeconfig', controlPlane().adminKubeconfig, '--identity', `${tag}-controller`],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', '0', '--lease-namespace', 'default'],
      ...['--lease-name', `${tag}-controller`, '--resync-seconds', '1', '--debounce-ms', '100'],
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

/** An agent's `route pass` log lines (status, counts), in order. */
const passes = (agent: NodeAgent | undefined): Record<string, unknown>[] =>
  agent?.log.filter((l) => l.message === 'route pass') ?? [];

/** Polls `check` every 200 ms until it returns true; fails after `timeoutMs` with `what`. */
async function until(
  what: string,
  check: () => boolean,
  timeoutMs = 30_000,
  detail: () => string = () => '',
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what} ${detail()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

void describe(`e2e routes: route agents on three nodes (${ptp.label})`, () => {
  let fx: Fixture;
  let w: World;
  let controller: ChildProcess | undefined;
  const agents: (NodeAgent | undefined)[] = [];
  const pods = new Map<string, { node: number; v4: string; v6?: string }>();
  const podNs = (name: string): string => `${w.topo.prefix}p-${name}`;
  /** Our routes in node i, both families, as `ip` prints them (dev/metric/pref dropped), sorted. */
  const routesOf = (i: number): string[] =>
    ['-4', '-6']
      .flatMap((f) =>
        sh('ip', ['-n', w.topo.nodes[i] as string, f, 'route', 'show', 'proto', '210']).split('\n'),
      )
      .filter((l) => l !== '')
      .map((l) => l.replace(/ dev \S+| metric \d+| pref \S+/g, '').trim())
      .sort();

  /** The node agent (block-controller/agent/main.ts, `--routes`) in node i's namespace. */
  function startAgent(i: number): NodeAgent {
    const agent = startNodeAgent(w, i, ['--routes', '--log-level', 'debug']);
    agents[i] = agent;
    return agent;
  }
  /** node i's agent's HTTP endpoint `path`, fetched inside its namespace: [status, body]. */
  const probe = (i: number, path: string): [number, string] => agents[i]?.probe(path) ?? [0, 'no agent'];

  async function stopAgent(i: number, signal: NodeJS.Signals): Promise<void> {
    const a = agents[i];
    agents[i] = undefined;
    await a?.stop(signal);
  }

  async function addPod(
    name: string,
    node: number,
    ipam: Record<string, unknown> = {},
    args?: [string, string][],
  ) {
    const rt = {
      containerID: `${tag}-${name}`,
      netns: netnsPath(w.topo.addPod(name)),
      ifname: 'eth0',
      ...(args ? { args } : {}),
    };
    const conf = w.conflist(node, {
      ipv4Pools: [`${tag}-v4`],
      ipv6Pools: [`${tag}-v6`],
      assignIPv6: true,
      ...ipam,
    });
    const res = await w.cni(node).add(conf, rt);
    const ips = (res.ips as { address: string }[]).map((x) => x.address.split('/')[0] as string);
    const pod = {
      node,
      v4: ips.find((a) => !a.includes(':')) as string,
      ...(ips.find((a) => a.includes(':')) ? { v6: ips.find((a) => a.includes(':')) as string } : {}),
    };
    pods.set(name, pod);
    return { pod, rt, conf };
  }
  const ping = (from: string, to: string): { ok: boolean; out: string } => {
    const r = inNs(podNs(from), 'ping', ['-c', '1', '-W', '2', to]);
    return { ok: r.status === 0, out: r.stdout + r.stderr };
  };
  /** This test's blocks (another suite's leftovers are affine to nodes this test has not: no routes). */
  const ourBlocks = () => fx.blocks().filter((b) => /^(10\.213\.|fd13:)/.test(b.spec.cidr));
  /** The block (name, cidr) holding `address`. */
  const blockOf = (address: string) =>
    ourBlocks().find((b) => cidrContains(mustParseCidr(b.spec.cidr), parseIP(address) as IP));

  before(async () => {
    fx = fixture();
    fx.pool(`${tag}-v4`, '10.213.0.0/16', 26);
    fx.pool(`${tag}-v6`, 'fd13::/112', 122);
    w = await createWorld(3, ptp, tag);
    for (let i = 0; i < 3; i++) {
      sh('ip', ['-n', w.topo.nodes[i] as string, 'addr', 'add', `${v6Of(i)}/64`, 'dev', 'eth0', 'nodad']);
      fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: w.nodeName(i) } });
      const status = {
        status: {
          addresses: [
            { type: 'InternalIP', address: w.topo.nodeAddress(i) },
            { type: 'InternalIP', address: v6Of(i) },
            { type: 'Hostname', address: w.nodeName(i) },
          ],
        },
      };
      const r = kubectl([
        'patch',
        'node',
        w.nodeName(i),
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify(status),
      ]);
      assert.equal(r.status, 0, r.stderr);
    }
    controller = startController();
  });
  after(async () => {
    for (let i = 0; i < agents.length; i++) await stopAgent(i, 'SIGTERM');
    if (controller && controller.exitCode === null && controller.signalCode === null) {
      const gone = new Promise((resolve) => controller?.once('exit', resolve));
      controller.kill('SIGTERM');
      await gone;
    }
    await w?.destroy();
    fx?.cleanup();
  });

  void it("each node routes the other nodes' blocks via their InternalIP, both families", async (t) => {
    await addPod('a', 0);
    await addPod('b', 1);
    await addPod('c', 2);
    // the control: without the agents' routes, pods on different nodes cannot reach each other
    assert.equal(ping('a', pods.get('b')?.v4 as string).ok, false, 'no route to node 2 pods yet');
    const started = performance.now();
    for (let i = 0; i < 3; i++) startAgent(i);
    const expect = (i: number): string[] =>
      ourBlocks()
        .map((b) => {
          const owner = Number(/-node-(\d+)$/.exec(b.spec.affinity ?? '')?.[1]) - 1;
          if (owner === i) return `blackhole ${b.spec.cidr}`;
          return `${b.spec.cidr} via ${b.spec.cidr.includes(':') ? v6Of(owner) : w.topo.nodeAddress(owner)}`;
        })
        .sort();
    assert.equal(ourBlocks().length, 6, 'one v4 and one v6 block per node');
    for (let i = 0; i < 3; i++)
      await until(
        `routes of node ${i + 1}`,
        () => routesOf(i).join() === expect(i).join(),
        // The agents' start-up (module loading) took > 90 s at load 30-60 on 2 cores.
        300_000,
        () =>
          `: have ${JSON.stringify(routesOf(i))}, want ${JSON.stringify(expect(i))}; agent: ${JSON.stringify(agents[i]?.log.filter((l) => l.level !== 'debug'))}`,
      );
    t.diagnostic(
      `3 agents started → every node's 6 routes in place: ${(performance.now() - started).toFixed(0)} ms`,
    );
  });

  void it('pods on different nodes ping each other (IPv4 and IPv6)', () => {
    for (const [from, to] of [
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'a'],
    ] as const) {
      for (const family of ['v4', 'v6'] as const) {
        const dst = pods.get(to)?.[family] as string;
        const r = ping(from, dst);
        assert.ok(r.ok, `${from} → ${to} ${dst}: ${r.out}`);
      }
    }
  });

  void it('a borrowed address is routed to its borrower by every other node, its block owner included', async () => {
    const aBlock = blockOf(pods.get('a')?.v4 as string);
    assert.ok(aBlock);
    const borrowed = addressTextAt(mustParseCidr(aBlock.spec.cidr), 20);
    const d = await addPod('d', 2, { assignIPv6: false }, [['IP', borrowed]]);
    assert.equal(d.pod.v4, borrowed);
    const host = `${borrowed} via ${w.topo.nodeAddress(2)}`;
    await until(
      'host routes on nodes 1 and 2',
      () => routesOf(0).includes(host) && routesOf(1).includes(host),
    );
    assert.ok(
      !routesOf(2).some((l) => l.startsWith(`${borrowed} `)),
      'the borrower relies on ptp’s veth route',
    );
    for (const from of ['a', 'b', 'c']) {
      const r = ping(from, borrowed);
      assert.ok(r.ok, `${from} → d ${borrowed}: ${r.out}`);
    }
    await w.cni(2).del(d.conf, d.rt);
    await until(
      'host routes gone after DEL',
      () => !routesOf(0).includes(host) && !routesOf(1).includes(host),
    );
  });

  void it('API server unreachable: the agent turns not ready, stays alive, and recovers', async () => {
    await until('node 1 ready', () => probe(0, '/readyz')[0] === 200);
    await w.stopApi(0);
    try {
      await until('node 1 not ready', () => probe(0, '/readyz')[0] === 503);
      assert.match(probe(0, '/readyz')[1], /^watches: watch failing: /);
      assert.equal(probe(0, '/healthz')[0], 200, 'alive all along: not restarted by the kubelet');
      assert.ok(ping('a', pods.get('b')?.v4 as string).ok, 'routes stay, traffic flows');
    } finally {
      await w.startApi(0);
    }
    await until('node 1 ready again', () => probe(0, '/readyz')[0] === 200, 60_000);
  });

  void it('an agent restarted with an empty cache changes no route until it has synced', async () => {
    await until('node 1 idle', () => passes(agents[0]).at(-1)?.status === 'done');
    const before1 = routesOf(0);
    await stopAgent(0, 'SIGKILL');
    await w.stopApi(0);
    let agent: NodeAgent;
    try {
      agent = startAgent(0);
      // The first pass, then the 10 s repair pass: both wait.
      await until(
        'two waiting passes',
        () => passes(agent).filter((l) => l.status === 'waiting').length >= 2,
        300_000,
      );
      assert.deepEqual(routesOf(0), before1, 'no route touched while the view is empty');
      assert.ok(passes(agent).every((l) => l.status === 'waiting' && l.why === 'not-synced'));
      assert.ok(ping('a', pods.get('b')?.v4 as string).ok, 'traffic keeps flowing');
    } finally {
      await w.startApi(0);
    }
    // The watches retry with a backoff of up to 30 s: the first synced pass follows the next retry.
    await until('a synced pass', () => passes(agent).some((l) => l.status === 'done'), 120_000);
    const first = passes(agent).find((l) => l.status === 'done');
    assert.deepEqual(
      [first?.added, first?.replaced, first?.removed, first?.failed],
      [0, 0, 0, []],
      'the first synced pass finds every route in place',
    );
    assert.deepEqual(routesOf(0), before1);
    assert.ok(ping('a', pods.get('c')?.v6 as string).ok);
  });
});

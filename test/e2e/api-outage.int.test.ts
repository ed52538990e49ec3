/**
 * End to end, the API server stopped for 30 s while pods churn (issue 10, tests), as root in
 * namespaces created here: two "node" namespaces on a bridge, the real node agent in each,
 * pods through ptp + blockipam (the Bun executable) started and deleted without
 * pause on both nodes — and this file's own control plane, whose kube-apiserver is stopped by
 * its PID (SIGTERM) for 30 s and started again with the same command line. Asserted: the agents
 * turn not ready during the outage and ready again after it without a restart; every ADD and DEL
 * issued during the outage fails with CNI code 11 and an ADD that failed leaves nothing behind
 * (no allocation, no interface, no cached result); every ADD and DEL issued after recovery
 * succeeds; the DELs the runtime retries (failed DELs, and the DEL after each failed ADD)
 * succeed; no allocation is left; `ipamctl check` exits 0. Nothing asserts a duration: the
 * 30 s are the outage's length, every wait is for a condition.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkBlockInvariants } from 'blockipam/core';
import { privateControlPlane, type PrivateControlPlane } from '../helpers/private-control-plane.ts';
import { fixture, type Fixture } from '../plugin/helpers/cluster.ts';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { PluginError, type NetworkList, type RuntimeConf } from './harness/libcni.ts';
import { inNs, netnsPath } from './harness/netns.ts';
import { startNodeAgent, type NodeAgent } from './harness/node-agent.ts';
import { createWorld, currentPtp, type World } from './harness/world.ts';

const tag = 'e2o';
const NODES = 2;
/** The outage's length (the issue's 30 s): an input of the test, not something it measures. */
const OUTAGE_MS = 30_000;
/** Live pods per node before the churn deletes the oldest. */
const LIVE_PER_NODE = 3;
/** Pause between a worker's calls: a runtime does not respawn a failed sandbox in a tight loop. */
const PAUSE_MS = 200;
/** Pause after a failed call: the kubelet backs off before it retries a pod (here: the next pod). */
const BACKOFF_MS = 2_000;
/** Bounded waits for conditions (start-up of Node processes took > 90 s at load 30-60). */
const WAIT_MS = 300_000;

// This file's own control plane, before anything asks for the run's (currentPtp() does).
const cp: PrivateControlPlane = privateControlPlane();
// The current upstream ptp, which scripts/setup.sh builds; missing, createWorld fails the suite
// naming it (no skip, no quiet fallback to another build: test/helpers/tier.ts).
const ptp = currentPtp();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Phase = 'before' | 'stopping' | 'down' | 'starting' | 'recovering' | 'after';
interface Call {
  readonly op: 'ADD' | 'DEL';
  readonly node: number;
  readonly pod: string;
  /** Phase when issued and when answered. */
  readonly issued: Phase;
  ended?: Phase;
  /** undefined: success; else the CNI error code (0: no error document). */
  code?: number;
  details?: string;
}
interface Pod {
  readonly name: string;
  readonly node: number;
  readonly rt: RuntimeConf;
}

async function until(what: string, check: () => boolean, detail: () => string = () => ''): Promise<void> {
  const end = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what} ${detail()}`);
    await sleep(200);
  }
}

void describe(`e2e: the API server stopped for 30 s while pods churn (${ptp.label})`, () => {
  let fx: Fixture;
  let w: World;
  const agents: NodeAgent[] = [];
  let phase: Phase = 'before';
  const calls: Call[] = [];
  /** Pods whose ADD succeeded and that no successful DEL removed yet. */
  const live: Pod[][] = [];
  /** Pods whose ADD failed: the runtime DELs them (here: after recovery). */
  const pendingDel: Pod[] = [];
  /** Pods whose ADD was issued and answered during the outage (all must have failed). */
  const outageAdds: Pod[] = [];
  let churning = true;
  const workers: Promise<void>[] = [];

  const conf = (node: number): NetworkList => w.conflist(node, { ipv4Pools: [`${tag}-v4`] });
  const handle = (pod: Pod): string => `${conf(pod.node).name}.${pod.rt.containerID}.eth0`;

  async function call(op: Call['op'], pod: Pod): Promise<Call> {
    const c: Call = { op, node: pod.node, pod: pod.name, issued: phase };
    calls.push(c);
    try {
      if (op === 'ADD') await w.cni(pod.node).add(conf(pod.node), pod.rt);
      else await w.cni(pod.node).del(conf(pod.node), pod.rt);
    } catch (e) {
      if (!(e instanceof PluginError)) throw e;
      c.code = e.code;
      c.details = e.message;
    }
    c.ended = phase;
    return c;
  }

  /** One node's churn: ADD a new pod, DEL the oldest once LIVE_PER_NODE are up, as a runtime would. */
  async function churn(node: number): Promise<void> {
    live[node] = [];
    for (let seq = 0; churning; seq++) {
      const name = `n${node}-${seq}`;
      const pod: Pod = {
        name,
        node,
        rt: { containerID: `${tag}-${name}`, netns: netnsPath(w.topo.addPod(name)), ifname: 'eth0' },
      };
      const add = await call('ADD', pod);
      if (add.code === undefined) live[node]?.push(pod);
      else {
        if (add.issued === 'down' && add.ended === 'down') outageAdds.push(pod);
        pendingDel.push(pod); // the runtime DELs a sandbox whose ADD failed
      }
      await sleep(add.code === undefined ? PAUSE_MS : BACKOFF_MS);
      // The oldest pod is deleted once LIVE_PER_NODE are up, and after every failed ADD (pods go
      // on being deleted during the outage while none start). A failed DEL leaves it the oldest:
      // the next DEL retries it, as the kubelet retries a pod's teardown until it succeeds.
      const pods = live[node] ?? [];
      const oldest = pods[0];
      if (oldest && pods.length >= (add.code === undefined ? LIVE_PER_NODE : 1)) {
        const del = await call('DEL', oldest);
        if (del.code === undefined) {
          pods.shift();
          w.topo.deletePod(oldest.name);
        }
        await sleep(del.code === undefined ? PAUSE_MS : BACKOFF_MS);
      }
    }
  }
  const count = (node: number, op: Call['op'], p: Phase, ok?: boolean): number =>
    calls.filter(
      (c) =>
        c.node === node &&
        c.op === op &&
        c.issued === p &&
        c.ended !== undefined &&
        (ok === undefined || (c.code === undefined) === ok),
    ).length;
  const ready = (i: number): number => agents[i]?.probe('/readyz')[0] ?? 0;

  before(async () => {
    fx = fixture();
    fx.pool(`${tag}-v4`, '10.214.0.0/16', 26);
    w = await createWorld(NODES, ptp, tag);
    for (let i = 0; i < NODES; i++) {
      fx.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: w.nodeName(i) } });
      agents[i] = startNodeAgent(w, i);
    }
  });
  after(async () => {
    churning = false;
    await Promise.allSettled(workers);
    for (const a of agents) await a.stop();
    await w?.destroy();
    cp.stop();
  });

  void it('agents ready, pods churning on both nodes', async () => {
    for (let i = 0; i < NODES; i++)
      await until(
        `agent ${i + 1} ready`,
        () => ready(i) === 200,
        () => JSON.stringify(agents[i]?.log.slice(-20)),
      );
    for (let i = 0; i < NODES; i++) workers.push(churn(i));
    for (let i = 0; i < NODES; i++)
      await until(
        `node ${i + 1}: 3 ADDs and a DEL before the outage`,
        () => count(i, 'ADD', 'before', true) >= 3 && count(i, 'DEL', 'before', true) >= 1,
        () => JSON.stringify(calls.filter((c) => c.code !== undefined)),
      );
    assert.deepEqual(
      calls.filter((c) => c.ended !== undefined && c.code !== undefined),
      [],
      'nothing fails before the outage',
    );
  });

  void it('kube-apiserver stopped for 30 s: agents not ready, every ADD and DEL fails with code 11', async () => {
    phase = 'stopping';
    const pid = cp.apiServerPid();
    await cp.stopApiServer();
    phase = 'down';
    try {
      await sleep(OUTAGE_MS);
      for (let i = 0; i < NODES; i++) {
        await until(`agent ${i + 1} not ready`, () => ready(i) === 503);
        assert.match(agents[i]?.probe('/readyz')[1] ?? '', /^watches: watch failing: /);
        assert.equal(agents[i]?.probe('/healthz')[0], 200, 'alive: nothing for the kubelet to restart');
        await until(
          `node ${i + 1}: an ADD and a DEL during the outage`,
          () => count(i, 'ADD', 'down') >= 1 && count(i, 'DEL', 'down') >= 1,
        );
      }
      const during = calls.filter((c) => c.issued === 'down' && c.ended === 'down');
      for (const c of during)
        assert.equal(c.code, 11, `${c.op} ${c.pod} during the outage: ${c.details ?? 'succeeded'}`);
    } finally {
      phase = 'starting';
      await cp.startApiServer();
      phase = 'recovering';
    }
    assert.notEqual(cp.apiServerPid(), pid, 'a new kube-apiserver process');
  });

  void it('everything recovers by itself: agents ready again, every call after recovery succeeds', async () => {
    for (let i = 0; i < NODES; i++) {
      await until(`agent ${i + 1} ready again`, () => ready(i) === 200);
      assert.ok(agents[i]?.running(), `agent ${i + 1} was not restarted`);
    }
    phase = 'after';
    for (let i = 0; i < NODES; i++)
      await until(
        `node ${i + 1}: 4 ADDs and 4 DELs after recovery`,
        () => count(i, 'ADD', 'after') >= 4 && count(i, 'DEL', 'after') >= 4,
      );
    churning = false;
    await Promise.all(workers);
    const failed = calls.filter((c) => c.issued === 'after' && c.code !== undefined);
    assert.deepEqual(failed, [], 'every ADD and DEL issued after recovery succeeds');
  });

  void it('an ADD that failed during the outage left nothing behind; the runtime’s retried DELs succeed', async () => {
    assert.ok(outageAdds.length >= NODES, `outage ADDs: ${outageAdds.length}`);
    const held = fx.allocations();
    for (const pod of outageAdds) {
      assert.equal(held.has(handle(pod)), false, `no allocation for ${pod.name}`);
      assert.equal(
        w.cni(pod.node).cached(conf(pod.node), pod.rt),
        undefined,
        `no cached result: ${pod.name}`,
      );
      const link = inNs(`${w.topo.prefix}p-${pod.name}`, 'ip', ['link', 'show', 'eth0']);
      assert.notEqual(link.status, 0, `no eth0 in ${pod.name}`);
    }
    for (const pod of pendingDel.splice(0)) {
      const del = await call('DEL', pod);
      assert.equal(del.code, undefined, `retried DEL of ${pod.name}: ${del.details ?? ''}`);
      w.topo.deletePod(pod.name);
    }
    for (const pod of live.flat()) {
      const del = await call('DEL', pod);
      assert.equal(del.code, undefined, `DEL of ${pod.name}: ${del.details ?? ''}`);
      w.topo.deletePod(pod.name);
    }
    const left = [...fx.allocations().keys()].filter((h) => h.includes(`.${tag}-`));
    assert.deepEqual(left, [], 'no allocation left');
    for (let i = 0; i < NODES; i++) {
      const links = inNs(w.topo.nodes[i] as string, 'ip', ['-o', 'link', 'show']).stdout;
      const names = links.split('\n').flatMap((l) => /^\d+: ([^:@]+)/.exec(l)?.[1] ?? []);
      assert.deepEqual(names.sort(), ['eth0', 'lo'], `node ${i + 1}: no pod veth left`);
    }
    for (const block of fx.blocks()) assert.deepEqual(checkBlockInvariants(block), []);
  });

  void it('ipamctl check is clean afterwards', (t) => {
    const by = (p: Phase): string => {
      const of = calls.filter((c) => c.issued === p);
      const failed = of.filter((c) => c.code !== undefined);
      const codes = [...new Set(failed.map((c) => c.code))].join('/');
      return `${p}: ${of.filter((c) => c.op === 'ADD').length} ADD + ${of.filter((c) => c.op === 'DEL').length} DEL, ${failed.length} failed${codes ? ` (code ${codes})` : ''}`;
    };
    t.diagnostic(
      `calls by the phase they were issued in — ${(['before', 'stopping', 'down', 'starting', 'recovering', 'after'] as const).map(by).join('; ')}`,
    );
    const r = spawnSync(
      process.execPath,
      [join(repoRoot, 'cli', 'main.ts'), 'check', '--kubeconfig', cp.adminKubeconfig, '--quiet'],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, `ipamctl check: ${r.stdout}${r.stderr}`);
  });
});

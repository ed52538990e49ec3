/**
 * Faults of the node agent as its node's IPAM server, on the real 3-node cluster with the chart
 * installed (agents serving the IPAM socket, the plugin a thin client of it). Each scenario ends
 * with `ipamctl check` clean and the ledger exact (faults.ts assertLedger: every Running pod's
 * address allocated once, to its UID; no allocation of a pod that is gone; no address twice):
 *  1. the agent SIGKILLed (by PID, from the node's containerd) during a burst of 90 ADDs on its
 *     node, three rounds: every pod Running once the agent is back, and the node holding at most
 *     one block more than the burst and the watermark need (or it held before) — the agent and
 *     the direct path serving the node at once do not over-claim;
 *  2. the agent SIGKILLed during the burst of 90 DELs that follows: every address released;
 *  3. the agent DaemonSet rolled twice — `kubectl rollout restart`, then `helm upgrade` to
 *     another image reference — while 30 pods per node are deleted and re-created, round after
 *     round: no IPAM call fails (plugin log), no sandbox event, every pod Running;
 *  4. the API server stopped for 30 s (SIGTERM by PID, started again with its command line):
 *     no kubelet reports the network not ready meanwhile (STATUS answers from the node's own
 *     state, every node's agent says so), and pods start afterwards;
 *  5. the plugin in `standalone` mode (the direct path) run 15 times at once on a node while its
 *     agent serves a burst of 15 pod ADDs there: every address distinct, both sets stored; the
 *     standalone allocations DELed again;
 *  6. the agent SIGSTOPped for 40 s while pods churn on its node: the calls fall back to the
 *     direct path within the forwarder's bound and none fails, no node turns NotReady, and no
 *     ADD runs after its client gave up (the ledger after SIGCONT has no allocation of a gone pod).
 * What each scenario saw (times, the plugin's calls per path, its failures, sandbox failures) is
 * printed as test diagnostics.
 */
import assert from 'node:assert/strict';
import { before, test, type TestContext } from 'node:test';
import { cluster, daemon, inNode, kubectl, kubectlOk } from '../helpers/cluster.ts';
import { CHART } from '../charts/helm.ts';
import {
  addressOf,
  allocations,
  allocationsOf,
  checkClean,
  nodesReady,
  pinnedDeployment,
  pods,
  podsRunning,
  spreadDeployment,
  waitFor,
  watchNodes,
} from './blockipam.ts';
import type { PodObject } from './blockipam.ts';
import { chartFixture, helm, NAMESPACE, pluginLogOf, PREFIX, RELEASE } from './chart.ts';

import {
  affineBlocks,
  agentBack,
  agentOn,
  assertLedger,
  killAgent,
  kubeletLogOf,
  kubectlAsync,
  logOffsets,
  networkName,
  networkNotReady,
  pluginLines,
  report,
  secs,
  signalAgent,
  sizeOf,
  standalonePlugin,
} from './faults.ts';
import type { PluginRun } from './faults.ts';

const ns = 'bipam-faults';
const AGENTS = `${PREFIX}-agent`;
let n2 = '';
let n3 = '';
const chart = chartFixture(ns);

function scale(app: string, replicas: number): void {
  kubectlOk(['-n', ns, 'scale', `deployment/${app}`, `--replicas=${replicas}`]);
}

/** Waits for exactly `count` pods of `app`, all Running with an address, none terminating. */
const running = (app: string, count: number, timeoutMs?: number): Promise<PodObject[]> =>
  podsRunning(ns, app, count, timeoutMs);

/** Waits until the namespace holds no allocation. */
const released = (): Promise<true> =>
  waitFor(
    'every address of the namespace released',
    () => (allocationsOf(ns).length === 0 ? true : undefined),
    120_000,
  );

/** The Running pods of the namespace (every app). */
const runningPods = (): PodObject[] =>
  pods(ns).filter((p) => p.status.phase === 'Running' && p.status.podIP && !p.metadata.deletionTimestamp);

before(() => {
  const c = cluster();
  n2 = c.nodes[1] ?? 'node-2';
  n3 = c.nodes[2] ?? 'node-3';
});

/** The burst of scenarios 1 and 2: 90 pods of `burst` on n2. */
const BURST = 90;
/** Addresses a /26 block of the chart's pool can hold (64 less its reserved ordinals). */
const BLOCK_ADDRESSES = 61;
/** IPAMConfig minFreeAddressesPerNode's default: the free addresses a node keeps claimed ahead. */
const WATERMARK = 16;

/**
 * Scenarios 1 and 2: deployment `burst` (on n2) scaled in `direction` — `up`: 0 → 90, a burst
 * of ADDs; `down`: 90 → 0, a burst of DELs — and n2's agent SIGKILLed once 3 of the burst's
 * addresses are allocated (up) or released (down). Then, the agent restarted and Ready meanwhile:
 * every pod Running (up) or gone with every address released (down), the ledger exact and
 * `ipamctl check` clean.
 */
async function killDuringBurst(t: TestContext, direction: 'up' | 'down'): Promise<void> {
  const target = direction === 'up' ? BURST : 0;
  const offset = logOffsets(n2);
  const t0 = Date.now();
  scale('burst', target);
  const held = await waitFor(
    `the burst under way (3 of its addresses ${direction === 'up' ? 'allocated' : 'released'})`,
    () => {
      const n = allocationsOf(ns).length;
      return Math.abs(n - (BURST - target)) >= 3 ? n : undefined;
    },
    180_000,
    300,
  );
  const killed = killAgent(n2);
  const tKill = Date.now();
  t.diagnostic(`agent PID ${killed.pid} on ${n2} SIGKILLed ${secs(t0)} after the scale, ${held} allocated`);
  const burstDone = async (): Promise<void> => {
    await running('burst', target, 600_000);
    t.diagnostic(`${target} pods Running ${secs(t0)} after the scale`);
    if (target > 0) return;
    await released();
    t.diagnostic(`all released ${secs(t0)} after the scale`);
  };
  await Promise.all([
    agentBack(n2, killed.restarts).then(() =>
      t.diagnostic(`agent Ready again ${secs(tKill)} after the kill`),
    ),
    burstDone(),
  ]);
  assert.equal(new Set(assertLedger(ns, runningPods())).size, target);
  report(t, ns, n2, offset, 'burst', t0);
  await checkClean();
}

test('1. the agent SIGKILLed during a burst of 90 ADDs on its node, three rounds: every pod Running, at most one extra block a round', async (t) => {
  await nodesReady(120_000);
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('burst', n2)));
  for (let round = 1; round <= 3; round++) {
    const before = affineBlocks(n2).size;
    await killDuringBurst(t, 'up');
    const blocks = affineBlocks(n2);
    const used = [...blocks.values()].reduce((sum, n) => sum + n, 0);
    const need = Math.ceil((used + WATERMARK) / BLOCK_ADDRESSES);
    t.diagnostic(
      `round ${round}: ${n2} holds ${blocks.size} blocks (${before} before; ${used} addresses in use and the watermark need ${need})`,
    );
    assert.ok(
      blocks.size <= Math.max(before, need) + 1,
      `round ${round}: ${blocks.size} blocks, at most ${Math.max(before, need) + 1}`,
    );
    if (round === 3) break;
    scale('burst', 0);
    await running('burst', 0, 600_000);
    await released();
  }
});

test('2. the agent SIGKILLed during the burst of 90 DELs: every address released', async (t) => {
  assert.equal(allocationsOf(ns).length, BURST, 'the 90 pods of scenario 1 hold their addresses');
  await killDuringBurst(t, 'down');
});

test('3. the agent DaemonSet rolled twice (a restart, an upgrade) under churn of 30 pods per node: 0 failed IPAM calls', async (t) => {
  const c = cluster();
  const total = 30 * c.nodes.length;
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment('churn', total, 1)));
  await running('churn', total, 600_000);
  const offsets = new Map(c.nodes.map((n) => [n, logOffsets(n)]));
  const t0 = Date.now();
  let rounds = 0;
  /** Deletes and re-creates every churn pod, round after round, until the rollout is done. */
  const churnDuring = async (what: string, roll: () => void): Promise<void> => {
    const before = new Map(c.nodes.map((n) => [n, agentOn(n).uid]));
    roll();
    let rolled = false;
    const status = kubectlAsync([
      '-n',
      NAMESPACE,
      'rollout',
      'status',
      `daemonset/${AGENTS}`,
      '--timeout=300s',
    ]);
    void status.then(() => (rolled = true));
    const from = rounds;
    while (!rolled) {
      kubectlOk(['-n', ns, 'delete', 'pods', '-l', 'app=churn', '--wait=false', '--grace-period=1']);
      rounds++;
      await running('churn', total, 600_000);
    }
    const r = await status;
    assert.equal(r.status, 0, r.out);
    t.diagnostic(
      `${what}: rolled ${secs(t0)} after the start; ${rounds - from} churn rounds of ${total} pods`,
    );
    assert.ok(rounds > from, `${what}: pods churned during the roll`);
    for (const n of c.nodes)
      assert.notEqual(agentOn(n).uid, before.get(n), `${what}: ${n} has a new agent pod`);
  };
  await churnDuring('rollout restart', () =>
    kubectlOk(['-n', NAMESPACE, 'rollout', 'restart', `daemonset/${AGENTS}`]),
  );
  // the upgrade: a new image reference rolls the agents as a new version would (the same bytes:
  // wire compatibility across versions is the forwarder test's version skew)
  const next = `${chart.image().ref.split(':')[1] ?? ''}-next`;
  for (const n of c.nodes) {
    const tag = inNode(n, 'sh', [
      '-c',
      `ctr --address "$CONTAINERD" -n k8s.io images tag --force ${chart.image().ref} localhost/blockipam:${next}`,
    ]);
    assert.equal(tag.status, 0, tag.stderr);
  }
  await churnDuring('helm upgrade', () => {
    const upgrade = helm(4, [
      ...['upgrade', RELEASE, CHART, '--namespace', NAMESPACE, '--reuse-values'],
      ...['--set', `image.tag=${next}`],
    ]);
    assert.equal(upgrade.status, 0, `helm upgrade:\n${upgrade.stdout}\n${upgrade.stderr}`);
  });
  const ps = await running('churn', total, 600_000);
  assert.equal(new Set(assertLedger(ns, runningPods())).size, total);
  const failures: string[] = [];
  for (const n of c.nodes) {
    const seen = report(t, ns, n, offsets.get(n) ?? { plugin: 0, kubelet: 0 }, 'churn', t0);
    failures.push(...seen.failed.map((f) => `${n}: ${f}`), ...seen.events.map((e) => `${n}: ${e}`));
  }
  assert.deepEqual(failures, [], 'no IPAM call failed and no sandbox event during the two rolls');
  assert.equal(ps.length, total);
  scale('churn', 0);
  await running('churn', 0, 600_000);
  await released();
  assertLedger(ns, []);
  await checkClean();
});

test('4. the API server stopped 30 s: no node’s network turns not ready, pods start afterwards', async (t) => {
  const c = cluster();
  scale('churn', 3);
  await running('churn', 3);
  const kubelets = new Map(c.nodes.map((n) => [n, sizeOf(kubeletLogOf(n))]));
  const offsets = new Map(c.nodes.map((n) => [n, sizeOf(pluginLogOf(n))]));
  daemon('stop', 'apiserver');
  const tStop = Date.now();
  // the outage itself is the scenario: 30 s without an API server
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  const tStart = Date.now();
  daemon('start', 'apiserver');
  await waitFor(
    'the API server ready again',
    () => (kubectl(['get', '--raw', '/readyz']).status === 0 ? true : undefined),
    120_000,
  );
  t.diagnostic(
    `API server down ${((tStart - tStop) / 1000).toFixed(1)} s, ready ${secs(tStart)} after its start`,
  );
  for (const n of c.nodes) {
    const during = pluginLines(n, offsets.get(n) ?? 0).filter(
      (l) => l.cmd === 'STATUS' && Date.parse(l.time) > tStop && Date.parse(l.time) < tStart,
    );
    const ok = during.filter((l) => l.msg === 'done');
    const failed = during.filter((l) => l.level === 'error');
    t.diagnostic(`${n}: ${ok.length} STATUS answered during the outage, ${failed.length} failed`);
    assert.deepEqual(
      failed.map((l) => `${l.code} ${l.msg}: ${l.details}`),
      [],
      `${n}: STATUS failures during the outage`,
    );
    assert.ok(ok.length >= 1, `${n}: the runtime called STATUS during the outage`);
    assert.deepEqual(
      networkNotReady(n, kubelets.get(n) ?? 0),
      [],
      `${n}: the kubelet saw the network ready throughout`,
    );
    // a node with room in its blocks answers from its view without reading the API server; the
    // last known state is needed only when that rule has to read (docs/design-agent.md)
    const logs = kubectlOk(['-n', NAMESPACE, 'logs', agentOn(n).pod]);
    t.diagnostic(
      `${n}: agent "STATUS answered from the last known state": ${logs.split('STATUS answered from the last known state').length - 1}×`,
    );
  }
  await nodesReady(180_000);
  const tPods = Date.now();
  scale('churn', 6);
  await running('churn', 6);
  t.diagnostic(
    `3 more pods Running ${secs(tPods)} after the scale (${secs(tStart)} after the API server's start)`,
  );
  assert.equal(new Set(assertLedger(ns, runningPods())).size, 6);
  scale('churn', 0);
  await running('churn', 0);
  await released();
  await checkClean();
});

test('5. a standalone plugin and the agent write one node’s blocks at once: addresses distinct, both stored', async (t) => {
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('mixed', n3)));
  const offset = logOffsets(n3);
  const t0 = Date.now();
  // Waves of 3 standalone ADDs at once from the scale until the agent's burst has allocated all
  // 15 (2 to 12 waves), so the agent's ADDs fall inside the waves' window. (Waves that began
  // once the first pod address was allocated missed a burst the agent finished within one wave.)
  const tAdds = Date.now();
  scale('mixed', 15);
  const waves: string[] = [];
  const adds: PluginRun[] = [];
  while (waves.length < 2 || (waves.length < 12 && allocationsOf(ns).length < 15)) {
    const prefix = `faults-sa-w${waves.length + 1}`;
    waves.push(prefix);
    adds.push(...(await standalonePlugin(n3, 'ADD', prefix, 3)));
  }
  const tAddsDone = Date.now();
  for (const a of adds) assert.equal(a.rc, 0, `${a.containerID}: ${a.stdout}`);
  const saIps = adds.map(
    (a) => ((JSON.parse(a.stdout) as { ips: { address: string }[] }).ips[0]?.address ?? '').split('/')[0],
  );
  const ps = await running('mixed', 15);
  t.diagnostic(
    `15 pods Running ${secs(t0)} after the scale; ${adds.length} standalone ADDs in ${waves.length} waves over ${((tAddsDone - tAdds) / 1000).toFixed(1)} s`,
  );
  const lines = pluginLines(n3, offset.plugin).filter((l) => l.msg === 'done' && l.cmd === 'ADD');
  const standalone = lines.filter((l) => l.containerID?.startsWith('faults-sa-'));
  assert.equal(standalone.length, adds.length);
  assert.deepEqual(
    new Set(standalone.map((l) => l.path)),
    new Set(['direct']),
    'the standalone calls took the direct path',
  );
  const overlapping = lines.filter(
    (l) => l.path === 'agent' && Date.parse(l.time) >= tAdds && Date.parse(l.time) <= tAddsDone,
  ).length;
  t.diagnostic(`agent ADDs answered on ${n3} while the standalone ADDs ran: ${overlapping}`);
  assert.ok(overlapping >= 1, 'the agent served ADDs while the standalone plugin wrote');
  const podIps = assertLedger(ns, runningPods());
  const every = [...podIps, ...saIps];
  assert.equal(new Set(every).size, 15 + adds.length, `distinct addresses: ${every.join(' ')}`);
  const network = networkName(n3);
  const stored = allocations().filter((a) => a.handle.startsWith(`${network}.faults-sa-`));
  assert.deepEqual(stored.map(addressOf).sort(), [...saIps].sort(), 'the standalone allocations are stored');
  assert.ok(stored.every((a) => a.node === n3));
  assert.equal(ps.length, 15);
  for (const prefix of waves)
    for (const d of await standalonePlugin(n3, 'DEL', prefix, 3))
      assert.equal(d.rc, 0, `${d.containerID} DEL: ${d.stdout}`);
  assert.deepEqual(
    allocations().filter((a) => a.handle.startsWith(`${network}.faults-sa-`)),
    [],
  );
  report(t, ns, n3, offset, 'mixed', t0);
  scale('mixed', 0);
  await running('mixed', 0);
  await released();
  await checkClean();
});

test('6. the agent SIGSTOPped 40 s while pods churn on its node: calls fall back, the node stays Ready, no late ADD', async (t) => {
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('stall', n2, 10)));
  await running('stall', 10);
  await nodesReady(120_000);
  const offset = logOffsets(n2);
  const watching = watchNodes();
  // the sampler runs until stopped: stopped on every path, a failed assertion included
  const tStop = await stallUnderChurn(t, offset).catch(async (e: unknown) => {
    await watching.stop();
    throw e;
  });
  assert.deepEqual(await watching.stop(), [], 'no node turned NotReady and none lost its conflist');
  // an ADD the stopped agent ran after its client had fallen back would hold an address of no pod
  assert.equal(new Set(assertLedger(ns, runningPods())).size, 10);
  report(t, ns, n2, offset, 'stall', tStop);
  scale('stall', 0);
  await running('stall', 0);
  await released();
  await checkClean();
});

/**
 * Scenario 6's stall: n2's agent SIGSTOPped while the `stall` pods are deleted and re-created
 * for 40 s, then SIGCONT; the calls meanwhile answered by the direct path, none failed; the
 * agent Ready again and one more round of the pods Running.
 * @returns when the agent was stopped
 */
async function stallUnderChurn(t: TestContext, offset: { plugin: number }): Promise<number> {
  const pid = signalAgent(n2, 'STOP');
  const tStop = Date.now();
  let rounds = 0;
  let tCont = 0;
  try {
    // the stall itself is the scenario: 40 s of a stopped agent, pods churning on its node
    while (Date.now() - tStop < 40_000) {
      kubectlOk(['-n', ns, 'delete', 'pods', '-l', 'app=stall', '--wait=false', '--grace-period=1']);
      rounds++;
      await running('stall', 10, 300_000);
    }
  } finally {
    inNode(n2, 'kill', ['-CONT', String(pid)]);
    tCont = Date.now();
  }
  t.diagnostic(
    `agent PID ${pid} on ${n2} stopped ${((tCont - tStop) / 1000).toFixed(1)} s; ${rounds} churn rounds of 10 pods`,
  );
  const during = pluginLines(n2, offset.plugin).filter(
    (l) => Date.parse(l.time) >= tStop && Date.parse(l.time) <= tCont,
  );
  const direct = during.filter((l) => l.msg === 'done' && l.path === 'direct' && l.cmd === 'ADD').length;
  t.diagnostic(`${n2}: ${direct} ADDs answered by the direct path during the stall`);
  assert.ok(direct >= 10, 'the ADDs during the stall fell back to the direct path');
  assert.deepEqual(
    during.filter((l) => l.level === 'error').map((l) => `${l.cmd} ${l.code}: ${l.msg}`),
    [],
    'no call failed during the stall',
  );
  await waitFor(`the agent on ${n2} Ready again`, () => (agentOn(n2).ready ? true : undefined), 120_000);
  kubectlOk(['-n', ns, 'delete', 'pods', '-l', 'app=stall', '--wait=false', '--grace-period=1']);
  await running('stall', 10);
  return tStop;
}

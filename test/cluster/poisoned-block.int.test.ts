/**
 * A block an admin poisoned, on the real 3-node cluster after `helm install`: node 2's block B
 * holds three pods; the admin gives it a finalizer, spec.sequence 2^53−1 (the largest the CRD
 * takes, and above 2^52: unsafe — 2^53+1 the CRD now refuses even an admin) and a freed entry
 * dated 2099. Then:
 *  - the controller sets B's `Trusted` condition to reason `Frozen`, naming each freeze, and
 *    `blockipam_ipam_blocks_frozen` counts it; `ipamctl check` names each poison (unsafe-sequence,
 *    foreign-metadata, future-date) with what to do, and exits 1;
 *  - node 2 claims another block and its new pods get their addresses there, none from B, while
 *    B's pods stay routed (a pod on node 3 pings them);
 *  - one of B's pods is deleted: its CNI DEL succeeds in the frozen block (the plugin logs it
 *    done, no FailedKillPod), its allocation leaves B, and that release wrote B a safe sequence,
 *    so `ipamctl repair sequence` has nothing left to repair (exit 2);
 *  - the admin removes the finalizer and the dated entry (check's hints): B is trusted and
 *    allocated from again (the other block, emptied, is released; the next pod's address is B's),
 *    and `ipamctl check` is clean;
 *  - an ownerReference to a Node that exists (its real uid: the garbage collector keeps the block)
 *    freezes B too and is flagged; removed, B is trusted again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { isSafeSequence, SEQUENCE_MAX, SEQUENCE_REPAIRABLE_ABOVE } from 'blockipam/core';
import type { Condition, IPAMBlock } from 'blockipam/core';
import { cluster, kubectl, kubectlOk, type RunResult } from '../helpers/cluster.ts';
import {
  allocations,
  busybox,
  checkClean,
  checkReport,
  ipamctl,
  nodesReady,
  pinnedDeployment,
  pods,
  podsRunning,
  waitFor,
} from './blockipam.ts';
import type { Allocation, PodObject } from './blockipam.ts';
import { installWithPluginLog, pluginLogOf, setUpChart, tearDownChart, waitRolledOut } from './chart.ts';
import type { ChartImage } from './chart.ts';
import { allAgentRoutes, hasBlockRoute } from './attacker.ts';
import { pluginLines, sizeOf } from './faults.ts';
import { scrapeLeader, sum } from './metrics.ts';

const ns = 'bipam-poisoned';
const FINALIZER = 'x.example/hold';
/** A date core does not trust (beyond the clock skew): it reads as the epoch. */
const FUTURE = '2099-01-01T00:00:00Z';
const VICTIMS = ['victim-0', 'victim-1', 'victim-2'];

let n2 = '';
let n3 = '';
let image: ChartImage;
/** Node 2's block holding the victims: its name. */
let B = '';
/** B as the admin left it poisoned. */
let poisoned: IPAMBlock;
/** The ordinal of B's freed entry dated FUTURE. */
let datedOrdinal = 0;

function blocks(): IPAMBlock[] {
  return (JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as { items: IPAMBlock[] }).items;
}

function block(name: string): IPAMBlock {
  return JSON.parse(kubectlOk(['get', 'ipamblock', name, '-o', 'json'])) as IPAMBlock;
}

const affineTo = (node: string): IPAMBlock[] => blocks().filter((b) => b.spec.affinity === node);

/** Merge-patches IPAMConfig `default`'s spec (null removes a field: the CRD's default). */
function setConfig(spec: Record<string, number | null>): void {
  kubectlOk(['patch', 'ipamconfig', 'default', '--type=merge', '-p', JSON.stringify({ spec })]);
}

/** As admin: B changed by `change`, under its resourceVersion (a lost compare-and-swap is retried). */
function replaceB(change: (b: IPAMBlock) => IPAMBlock): IPAMBlock {
  for (let attempt = 1; ; attempt++) {
    const r = kubectl(['replace', '-o', 'json', '-f', '-'], JSON.stringify(change(block(B))));
    if (r.status === 0) return JSON.parse(r.stdout) as IPAMBlock;
    assert.ok(/the object has been modified/.test(r.stderr) && attempt < 5, r.stderr);
  }
}

function patchB(type: 'merge' | 'json', patch: unknown): RunResult {
  return kubectl(['patch', 'ipamblock', B, `--type=${type}`, '-p', JSON.stringify(patch)]);
}

/** B's `Trusted` condition once `ok` holds for it (the controller's pass wrote it). */
function trusted(what: string, ok: (c: Condition) => boolean): Promise<Condition> {
  return waitFor(
    `${B}'s Trusted condition: ${what}`,
    () => block(B).status?.conditions?.find((c) => c.type === 'Trusted' && ok(c)),
    120_000,
  );
}

/** The leading controller's `blockipam_ipam_blocks_frozen` by reason, once `ok` holds for it. */
function frozenGauge(what: string, ok: (byReason: Record<string, number>) => boolean): Promise<true> {
  return waitFor(
    `blockipam_ipam_blocks_frozen: ${what}`,
    () => {
      const samples = scrapeLeader();
      if (!samples) return undefined;
      const byReason = Object.fromEntries(
        ['terminating', 'finalizers', 'owner-references', 'unsafe-sequence'].map((r) => [
          r,
          sum(samples, 'blockipam_ipam_blocks_frozen', { reason: r }) ?? -1,
        ]),
      );
      return ok(byReason) ? true : undefined;
    },
    120_000,
  );
}

/** A busybox pod labelled app=`app`, pinned to `on`, grace 1 s (no controller: deleted, it is not replaced). */
function sleeper(name: string, on: string, app: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app } },
    spec: {
      terminationGracePeriodSeconds: 1,
      nodeSelector: { 'kubernetes.io/hostname': on },
      containers: [busybox('sleep', ['sleep', '3600'])],
    },
  };
}

const allocationOf = (pod: string): Allocation | undefined => allocations().find((a) => a.pod === pod);

function pingAll(targets: readonly PodObject[]): void {
  const [pinger] = pods(ns, 'app=pinger');
  assert.ok(pinger);
  for (const v of targets) {
    const ip = v.status.podIP ?? '';
    const r = kubectl(['-n', ns, 'exec', pinger.metadata.name, '--', 'ping', '-c', '1', '-W', '5', ip]);
    assert.equal(r.status, 0, `${n3} → ${v.metadata.name} (${ip}): ${r.stdout}${r.stderr}`);
  }
}

/** Every node but the owner routing `cidr` to `owner` (the agents' routes). */
function routedEverywhere(cidr: string, owner: string): Promise<true> {
  return waitFor(
    `every agent routing ${cidr} (${owner})`,
    () => {
      const routes = allAgentRoutes();
      return cluster().nodes.every((n) => hasBlockRoute(n, routes[n] ?? [], cidr, owner)) ? true : undefined;
    },
    120_000,
  );
}

/** `ipamctl check`'s problems naming B, by kind (messages joined), and its exit status. */
function checkOfB(): {
  status: number;
  kinds: Record<string, string>;
  hints: Record<string, string>;
  stdout: string;
} {
  const { status, stdout, report } = checkReport();
  const kinds: Record<string, string> = {};
  const hints: Record<string, string> = {};
  for (const p of report.problems.filter((x) => x.severity === 'problem')) {
    assert.ok(p.objects.includes(`IPAMBlock/${B}`), `only ${B} is a problem: ${JSON.stringify(p)}`);
    kinds[p.kind] = [kinds[p.kind], p.message].filter(Boolean).join(' | ');
    hints[p.kind] = [hints[p.kind], p.hint].filter(Boolean).join(' | ');
  }
  return { status, kinds, hints, stdout };
}

before(() => {
  image = setUpChart(ns);
  [, n2, n3] = cluster().nodes as [string, string, string];
});
after(() => tearDownChart(ns));

test('helm install; three pods on node 2 in its one block B, a pinger on node 3; B routed', async () => {
  // 0 until node 2 holds one block: a spare from concurrent first ADDs goes at once
  installWithPluginLog(image, { set: ['ipamConfig.emptyBlockReleaseSeconds=0'] });
  waitRolledOut();
  await nodesReady(120_000);
  for (const name of VICTIMS)
    kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(sleeper(name, n2, 'victim')));
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('pinger', n3, 1)));
  const victims = await podsRunning(ns, 'victim', VICTIMS.length);
  await podsRunning(ns, 'pinger', 1);
  const only = await waitFor(
    `${n2} holding one block, with the victims' addresses`,
    () => {
      const mine = affineTo(n2);
      const [b] = mine;
      return mine.length === 1 && b && VICTIMS.every((v) => allocationOf(v)?.block === b.metadata.name)
        ? b
        : undefined;
    },
    120_000,
  );
  B = only.metadata.name;
  console.log(`victims on ${n2}: ${victims.map((v) => v.status.podIP).join(', ')} in ${only.spec.cidr}`);
  // from here the default (300 s): the block node 2 claims next stays while it is empty
  setConfig({ emptyBlockReleaseSeconds: null });
  await routedEverywhere(only.spec.cidr, n2);
  pingAll(victims);
});

test('an admin poisons B: a finalizer, spec.sequence 2^53−1, a freed entry dated 2099 (2^53+1: the CRD refuses it)', () => {
  // raw JSON text: JavaScript would send 2^53+1 as 2^53
  const over = kubectl([
    'patch',
    'ipamblock',
    B,
    '--type=merge',
    '-p',
    '{"spec":{"sequence":9007199254740993}}',
  ]);
  assert.notEqual(over.status, 0, 'the CRD refuses 2^53+1');
  assert.match(
    over.stderr,
    /spec\.sequence: Invalid value: 9007199254740993: .*less than or equal to 9007199254740991/,
  );
  poisoned = replaceB((b) => {
    const freed = new Set(b.spec.freed.map((e) => e.ordinal));
    // the highest never-used ordinal of the /26 (63, 0 and 1 are reserved)
    datedOrdinal =
      [...Array(61).keys()]
        .map((i) => 62 - i)
        .find((o) => !(String(o) in b.spec.allocations) && !freed.has(o)) ?? 0;
    assert.ok(datedOrdinal > 1, `a never-used ordinal in ${B}`);
    return {
      ...b,
      metadata: { ...b.metadata, finalizers: [FINALIZER] },
      spec: {
        ...b.spec,
        sequence: SEQUENCE_MAX,
        freed: [...b.spec.freed, { ordinal: datedOrdinal, releasedAt: FUTURE }],
      },
    };
  });
  assert.equal(poisoned.spec.sequence, SEQUENCE_MAX);
  assert.deepEqual(poisoned.metadata.finalizers, [FINALIZER]);
});

test('the controller marks B Frozen and counts it; ipamctl check names each poison with what to do, exit 1', async () => {
  const frozen = await trusted(
    'True, reason Frozen, naming the finalizer and the sequence',
    (c) => c.status === 'True' && c.reason === 'Frozen' && c.message?.includes('unsafe-sequence') === true,
  );
  console.log(`${B}'s Trusted condition: ${JSON.stringify(frozen)}`);
  assert.match(frozen.message ?? '', new RegExp(`finalizers: carries finalizers ${FINALIZER}`));
  assert.match(
    frozen.message ?? '',
    new RegExp(`unsafe-sequence: spec\\.sequence ${SEQUENCE_MAX} is above 2\\^52`),
  );
  // by its first freeze reason (core's order): finalizers
  await frozenGauge('finalizers 1', (g) => g.finalizers === 1 && g['unsafe-sequence'] === 0);

  const { status, kinds, hints, stdout } = checkOfB();
  console.log(`ipamctl check with ${B} poisoned:\n${stdout}`);
  assert.equal(status, 1, stdout);
  assert.deepEqual(Object.keys(kinds).sort(), ['foreign-metadata', 'future-date', 'unsafe-sequence'], stdout);
  assert.match(kinds['unsafe-sequence'] ?? '', new RegExp(`spec\\.sequence ${SEQUENCE_MAX} is above 2\\^52`));
  assert.match(hints['unsafe-sequence'] ?? '', new RegExp(`^ipamctl repair sequence ${B} `));
  assert.match(kinds['foreign-metadata'] ?? '', new RegExp(`carries finalizers ${FINALIZER}`));
  assert.match(hints['foreign-metadata'] ?? '', /"path":"\/metadata\/finalizers"/);
  assert.match(
    kinds['future-date'] ?? '',
    new RegExp(`freed ordinal ${datedOrdinal} releasedAt ${FUTURE} is in the future`),
  );
});

test('node 2 claims another block: its new pods get addresses there, none from B; B’s pods stay routed', async () => {
  // node 2 held B only before the poison (its upkeep may have claimed the next block already)
  const held = new Set([B]);
  console.log(
    `${n2}'s blocks before its new pods: ${affineTo(n2)
      .map((b) => b.spec.cidr)
      .join(', ')}`,
  );
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('fresh', n2, 2)));
  const fresh = await podsRunning(ns, 'fresh', 2);
  for (const p of fresh) {
    const a = allocationOf(p.metadata.name);
    assert.ok(a, `${p.metadata.name} (${p.status.podIP}) has an allocation`);
    assert.equal(a.affinity, n2, `${p.metadata.name}'s block ${a.cidr} is ${n2}'s`);
    assert.ok(
      !held.has(a.block),
      `${p.metadata.name}'s ${p.status.podIP} is in ${a.cidr}, a block claimed since`,
    );
    await routedEverywhere(a.cidr, n2);
  }
  assert.deepEqual(block(B).spec.allocations, poisoned.spec.allocations, `nothing allocated from ${B}`);
  await routedEverywhere(poisoned.spec.cidr, n2);
  pingAll(pods(ns, 'app=victim'));
});

test('one of B’s pods deleted: its DEL succeeds in the frozen block, and the release makes B’s sequence safe', async () => {
  const [gone, ...kept] = VICTIMS as [string, ...string[]];
  const held = allocationOf(gone);
  assert.ok(held && held.block === B, `${gone} holds an address of ${B}`);
  // the handle is <network>.<container ID>.<ifname>: the plugin logs the container ID
  const sandbox = /\.([0-9a-f]{64})\./.exec(held.handle)?.[1] ?? '';
  assert.ok(sandbox, held.handle);
  const offset = sizeOf(pluginLogOf(n2));
  const startedMs = Date.now();
  kubectlOk(['-n', ns, 'delete', 'pod', gone, '--wait=false']);
  await waitFor(
    `pod ${gone} gone`,
    () => (pods(ns).some((p) => p.metadata.name === gone) ? undefined : true),
    120_000,
  );
  await waitFor(`${gone}'s allocation gone from ${B}`, () => (allocationOf(gone) ? undefined : true), 60_000);

  const lines = pluginLines(n2, offset).filter((l) => l.containerID === sandbox);
  assert.ok(
    lines.some((l) => l.cmd === 'DEL' && l.msg === 'done' && l.code === 0),
    `the plugin on ${n2} logs DEL of ${sandbox} done, exit 0: ${JSON.stringify(lines)}`,
  );
  assert.deepEqual(
    lines.filter((l) => l.level === 'error'),
    [],
    `no failed call for ${sandbox}`,
  );
  // failures of the deletion only: a sandbox ADD refused on a fresh install (the claims policy
  // fails closed until the controller publishes the pool list) is the runtime's retry, not this
  const events = (
    JSON.parse(kubectlOk(['-n', ns, 'get', 'events', '-o', 'json'])) as {
      items: { reason: string; message?: string; lastTimestamp?: string; involvedObject: { name: string } }[];
    }
  ).items.filter(
    (e) =>
      e.involvedObject.name === gone &&
      /^Failed/.test(e.reason) &&
      Date.parse(e.lastTimestamp ?? '') >= Math.floor(startedMs / 1000) * 1000,
  );
  assert.deepEqual(events, [], `no FailedKillPod or other failure event of ${gone}`);

  const b = block(B);
  assert.ok(!(String(held.ordinal) in b.spec.allocations), `ordinal ${held.ordinal} released`);
  assert.ok(
    b.spec.freed.some((e) => e.ordinal === held.ordinal),
    `ordinal ${held.ordinal} in freed`,
  );
  assert.ok(
    isSafeSequence(b.spec.sequence) &&
      b.spec.sequence <= SEQUENCE_REPAIRABLE_ABOVE &&
      b.spec.sequence > startedMs,
    `the release wrote a repaired sequence: ${b.spec.sequence}`,
  );
  assert.deepEqual(b.metadata.finalizers, [FINALIZER], 'the finalizer stays: B is still frozen');
  console.log(
    `${gone}'s DEL: ${JSON.stringify(lines.filter((l) => l.cmd === 'DEL'))}; ${B}'s sequence now ${b.spec.sequence}`,
  );
  await trusted(
    'Frozen by the finalizer only',
    (c) => c.reason === 'Frozen' && !c.message?.includes('unsafe-sequence'),
  );

  const repair = ipamctl(['repair', 'sequence', B, '--yes']);
  console.log(`ipamctl repair sequence ${B} --yes: exit ${repair.status}: ${repair.stderr.trim()}`);
  assert.equal(repair.status, 2, repair.stdout + repair.stderr);
  assert.match(repair.stderr, new RegExp(`IPAMBlock ${B} has no unsafe sequence .*: nothing to repair`));
  // The release dated its entry now: core, and check's freed-order rule (I7), read the 2099 entry
  // before it as the epoch, so the order holds; what is left is the finalizer and the dated entry.
  const after = checkOfB();
  assert.deepEqual(Object.keys(after.kinds).sort(), ['foreign-metadata', 'future-date'], after.stdout);
  pingAll(pods(ns, 'app=victim'));
  assert.deepEqual(
    pods(ns, 'app=victim')
      .map((p) => p.metadata.name)
      .sort(),
    kept,
    'the victims left',
  );
});

test('the admin removes the finalizer and the dated entry: B trusted and allocated from again; check is clean', async () => {
  // check's hint for foreign-metadata, then the dated entry (check's hint: remove it)
  const removed = patchB('json', [{ op: 'remove', path: '/metadata/finalizers' }]);
  assert.equal(removed.status, 0, removed.stderr);
  replaceB((b) => ({
    ...b,
    spec: { ...b.spec, freed: b.spec.freed.filter((e) => e.releasedAt !== FUTURE) },
  }));
  await trusted('True, reason Trusted', (c) => c.status === 'True' && c.reason === 'Trusted');
  await frozenGauge('0 for every reason', (g) => Object.values(g).every((v) => v === 0));
  await checkClean();

  // allocatable again: the block node 2 claimed meanwhile, emptied, is released (B keeps room),
  // and node 2's next pod gets B's address
  const others = affineTo(n2).filter((b) => b.metadata.name !== B);
  assert.ok(others.length > 0, `${n2} claimed a block besides ${B}`);
  setConfig({ emptyBlockReleaseSeconds: 0 });
  kubectlOk(['-n', ns, 'scale', 'deployment', 'fresh', '--replicas=0']);
  await waitFor(
    `${n2}'s other blocks released once empty`,
    () => (affineTo(n2).every((b) => b.metadata.name === B) ? true : undefined),
    120_000,
  );
  setConfig({ emptyBlockReleaseSeconds: null });
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(sleeper('again', n2, 'again')));
  await waitFor(
    'pod again Running with an address',
    () => pods(ns).find((p) => p.metadata.name === 'again' && p.status.phase === 'Running' && p.status.podIP),
    300_000,
  );
  assert.equal(allocationOf('again')?.block, B, `the next pod on ${n2} gets an address of ${B}`);
});

test('an ownerReference to a Node that exists: B frozen and flagged, the garbage collector keeps it; removed, trusted', async () => {
  const uid = kubectlOk(['get', 'node', n3, '-o', 'jsonpath={.metadata.uid}']).trim();
  const before = block(B);
  const owned = patchB('merge', {
    metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: n3, uid }] },
  });
  assert.equal(owned.status, 0, owned.stderr);
  const frozen = await trusted('Frozen by the ownerReference', (c) => c.reason === 'Frozen');
  assert.match(frozen.message ?? '', new RegExp(`owner-references: carries ownerReferences to Node ${n3}`));
  await frozenGauge('owner-references 1', (g) => g['owner-references'] === 1);
  const { status, kinds, hints, stdout } = checkOfB();
  assert.equal(status, 1, stdout);
  assert.deepEqual(Object.keys(kinds), ['foreign-metadata'], stdout);
  assert.match(kinds['foreign-metadata'] ?? '', new RegExp(`carries ownerReferences to Node ${n3}`));
  assert.match(
    hints['foreign-metadata'] ?? '',
    /^remove them at once: .*"path":"\/metadata\/ownerReferences"/,
  );
  const kept = block(B);
  assert.equal(kept.metadata.uid, before.metadata.uid, `${B} is the same object`);
  assert.equal(kept.metadata.deletionTimestamp, undefined, `${B} is not being deleted`);

  const removed = patchB('json', [{ op: 'remove', path: '/metadata/ownerReferences' }]);
  assert.equal(removed.status, 0, removed.stderr);
  await trusted('True, reason Trusted', (c) => c.status === 'True' && c.reason === 'Trusted');
  await checkClean();
});

test('pods gone, every address released', async () => {
  // pods before the uninstall (after): their DELs need the plugin's token, which dies with the agents
  kubectlOk(['-n', ns, 'delete', 'deployments,pods', '--all']);
  await waitFor('the test pods gone', () => (pods(ns).length === 0 ? true : undefined), 120_000);
  await waitFor(
    `every address of ${ns} released`,
    () => (allocations().some((a) => a.namespace === ns) ? undefined : true),
    60_000,
  );
});

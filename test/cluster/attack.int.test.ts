/**
 * The attacker's probes on the real 3-node cluster, with the credentials the chart really hands
 * out: `helm install`, victim pods pinned to node 2 and a pod on node 3; then, as root on node 1,
 * the plugin's kubeconfig the agent wrote there, the agent's own projected token (read from the
 * kubelet's pod directory on node 1), the controller's pod token and a read-only `ipamctl` user
 * (ClusterRole `<release>-reader`) each try to take node 2's traffic or addresses. Every probe
 * but the tolerated one (5.) must be refused, and the refusal's message is asserted. Afterwards
 * nothing moved: node 2's block holds the same allocations and is the same object, with no
 * foreign metadata (the garbage collector had nothing to act on), no block appeared, and every
 * agent's routes (protocol 210) are the ones recorded before the probes plus those of a sentinel
 * block the admin creates for node 1 after them — the sentinel's route on every node is the
 * event that proves each agent has processed everything written before it (one ordered watch).
 * The victims still answer a ping from node 3; an empty block the admin gives an owner that does
 * not exist is deleted by the garbage collector (the wipe the ownerReferences probes attempt is
 * real here); node 2's agent still pre-claims a block and releases it when idle, and `ipamctl
 * check` is clean.
 *
 * Probes (the node credential's are run with the plugin kubeconfig and with the agent token):
 *  1. CREATE an unowned /28 inside node 2's /26 holding a live node-2 pod's ordinal for node 1;
 *  2. CREATE a /27 affine to node 1 overlapping node 2's /26;
 *  3. CREATE 20 unowned blocks labelled affine to node 2 (core's `nodeLabel`);
 *  4. CREATE a block outside every pool (10.250.0.0/26), and a claim for node 2;
 *  5. UPDATE node 2's block: add another node's allocation, take over or remove node 2's pod's
 *     allocation, change its affinity (to node 1, to none), change its labels (the policy
 *     answers both node credentials: each may update blocks); add metadata.ownerReferences to a
 *     Node that does not exist (the wipe: kube-controller-manager's garbage collector, which runs
 *     here, deletes an owned object whose owner is gone, live allocations and all), a finalizer,
 *     an annotation; set spec.sequence to 2^53+1 (raw JSON text: the CRD's maximum refuses it)
 *     and to 2^53−1 (unsafe: core freezes the block); add a spec.freed entry dated 2099 for a
 *     never-used ordinal with the sequence unchanged (refused), and with the sequence grown by
 *     one — TOLERATED: the policy cannot tell that write from a batched allocate-and-release of
 *     the caller's own (CEL has no clock), and core reads a date beyond the clock skew as the
 *     epoch (the ordinal is free and cooled, nothing is hidden), so it may be admitted; then
 *     `ipamctl check` must name it (future-date) and the admin removes it; change
 *     spec.affinityClaimTime; a merge PATCH adding ownerReferences (RBAC grants no patch);
 *     DELETE it; mint a plugin token bound to node 2's Node, or an unbound one (the tokens
 *     policy; the plugin's account: RBAC), a node token bound to node 2's agent pod (RBAC);
 *     delete the pool;
 *  6. the controller's writes: create node 2's IPAMNode (the route source), point it at node 1,
 *     add node 2's block to node 1's own IPAMNode, delete node 2's; set node 2's block's Trusted
 *     condition False (`ipamblocks/status`); add a pool to the claimable-pools ConfigMap (RBAC);
 *  7. the controller's token mints a node token (creating a block is its role: a podCIDR pool's);
 *  8. the reader creates, replaces and deletes a block, mints a token, edits the pool and the
 *     IPAMConfig, and tries the controller's writes of 6.
 * The count per credential is asserted against docs/install.md §Security.
 * With the policy in place, afterwards: borrowing (a one-block Manual pool whose block node 2
 * holds; a pod of it on node 3 borrows, is admitted and answers a ping routed by the agents)
 * and leak GC (an allocation naming a pod that does not exist is released by the controller).
 * Whenever the API gains a writable field (a new spec field, label or annotation that a reader
 * trusts), a probe writing it from another node's credential is added here.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { addressTextAt, newBlock, nodeLabel, parseCidr, POOLS_ANNOTATION, rfc3339 } from 'blockipam/core';
import type { IPAMBlock, IPAMNode } from 'blockipam/core';
import { cluster, kubectl, kubectlOk, type RunResult } from '../helpers/cluster.ts';
import {
  allocations,
  busybox,
  inCidr,
  checkClean,
  checkReport,
  nodesReady,
  pinnedDeployment,
  pods,
  podsRunning,
  waitFor,
} from './blockipam.ts';
import type { PodObject } from './blockipam.ts';
import {
  helm,
  installWithPluginLog,
  NAMESPACE,
  PREFIX,
  RELEASE,
  setUpChart,
  tearDownChart,
  waitRolledOut,
} from './chart.ts';
import type { ChartImage } from './chart.ts';
import {
  allAgentRoutes,
  as,
  dropLoot,
  hasBlockRoute,
  pluginCredential,
  podCredential,
  tokenCredential,
  whoami,
} from './attacker.ts';
import type { Credential } from './attacker.ts';

const ns = 'bipam-attack';
const POOL = 'default-ipv4'; // the chart's default pool: 10.244.0.0/16, /26 blocks
const POOL_RE = 'IPPool default-ipv4 \\(10\\.244\\.0\\.0/16\\)';
const READER = 'attack-reader';
const NODE_SA = `${PREFIX}-node`;
const PLUGIN_SA = `${PREFIX}-plugin`;
const CONTROLLER_SA = `${PREFIX}-controller`;

let n1 = '';
let n2 = '';
let n3 = '';
let victims: PodObject[] = [];
/** node 2's block holding the victims, as it was before the probes. */
let victimBlock: IPAMBlock;
/** The ordinal of the first victim's address in it. */
let victimOrdinal = 0;
/** Tolerated probes the policy admitted: each left node 2's block a freed entry dated FUTURE. */
let toleratedAdmitted = 0;
let routesBefore: Record<string, string[]> = {};
let blocksBefore: string[] = [];
let node: Credential[] = [];
let controller: Credential;
let reader: Credential;
let image: ChartImage;

function helmOk(args: readonly string[]): string {
  const r = helm(4, args);
  assert.equal(r.status, 0, `helm ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const running = (app: string, count: number): Promise<PodObject[]> => podsRunning(ns, app, count);

function blocks(): IPAMBlock[] {
  return (JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as { items: IPAMBlock[] }).items;
}

function block(name: string): IPAMBlock {
  return JSON.parse(kubectlOk(['get', 'ipamblock', name, '-o', 'json'])) as IPAMBlock;
}

/** `count` /26 CIDRs of the pool that no block holds, from the top of the pool down. */
function freeCidrs(count: number): string[] {
  const taken = new Set(blocks().map((b) => b.spec.cidr));
  const out: string[] = [];
  for (let i = 1023; i >= 0 && out.length < count; i--) {
    const cidr = `10.244.${i >> 2}.${(i & 3) * 64}/26`;
    if (!taken.has(cidr)) out.push(cidr);
  }
  return out;
}

/** Core's claim of `cidr` for `owner` (null: unowned), as the agent and the plugin create it. */
function claim(cidr: string, owner: string | null): IPAMBlock {
  const parsed = parseCidr(cidr);
  assert.ok(parsed, cidr);
  return newBlock({ cidr: parsed, pool: POOL, node: owner, nowMs: Date.now() });
}

/**
 * The quiet state the probes start from: no node holds an empty block besides its only one
 * (concurrent first ADDs may claim a second; released at once while emptyBlockReleaseSeconds is
 * 0), and every node's routes are exactly one per node-affine block (no borrowing here): a
 * blackhole for its own, a route via the owner elsewhere.
 */
function settled(): Record<string, string[]> | undefined {
  const nodes = cluster().nodes;
  const owned = blocks().filter((b) => b.spec.affinity !== null && nodes.includes(b.spec.affinity));
  for (const n of nodes) {
    const mine = owned.filter((b) => b.spec.affinity === n);
    if (mine.length > 1 && mine.some((b) => Object.keys(b.spec.allocations).length === 0)) return undefined;
  }
  const routes = allAgentRoutes();
  for (const [at, rs] of Object.entries(routes)) {
    if (rs.length !== owned.length) return undefined;
    for (const b of owned) if (!hasBlockRoute(at, rs, b.spec.cidr, b.spec.affinity ?? '')) return undefined;
  }
  return routes;
}

/** Merge-patches IPAMConfig `default`'s spec (null removes a field: the CRD's default). */
function setConfig(spec: Record<string, number | null>): void {
  kubectlOk(['patch', 'ipamconfig', 'default', '--type=merge', '-p', JSON.stringify({ spec })]);
}

function ping(from: PodObject, to: string): RunResult {
  return kubectl(['-n', ns, 'exec', from.metadata.name, '--', 'ping', '-c', '1', '-W', '5', to]);
}

function pingVictims(): void {
  const [pinger] = pods(ns, 'app=pinger');
  assert.ok(pinger);
  for (const v of victims) {
    const r = ping(pinger, v.status.podIP ?? '');
    assert.equal(r.status, 0, `${n3} → ${v.metadata.name} (${v.status.podIP}): ${r.stdout}${r.stderr}`);
  }
}

function agentPod(on: string): { name: string; uid: string } {
  const list = JSON.parse(
    kubectlOk(['-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=agent', '-o', 'json']),
  ) as { items: { metadata: { name: string; uid: string }; spec: { nodeName: string } }[] };
  const pod = list.items.find((p) => p.spec.nodeName === on);
  assert.ok(pod, `an agent pod on ${on}`);
  return pod.metadata;
}

before(() => {
  image = setUpChart(ns);
  [n1, n2, n3] = cluster().nodes as [string, string, string];
});
after(() => {
  kubectl(['delete', 'clusterrolebinding', READER]);
  if (n1) dropLoot(n1);
  tearDownChart(ns);
});

test('helm install; victims on node 2, a pod on node 3 pinging them; every agent routes every block', async () => {
  // 0 until the start is quiet: a spare block from concurrent first ADDs goes at once
  installWithPluginLog(image, { set: ['ipamConfig.emptyBlockReleaseSeconds=0'] });
  waitRolledOut();
  await nodesReady(120_000);

  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('victim', n2, 3)));
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('pinger', n3, 1)));
  victims = await running('victim', 3);
  await running('pinger', 1);
  const [first] = victims;
  assert.ok(first);
  const held = allocations().find((a) => a.pod === first.metadata.name);
  assert.ok(held, `${first.metadata.name} (${first.status.podIP}) has an allocation`);
  assert.equal(held.affinity, n2, `${first.metadata.name}'s block ${held.cidr} is node 2's`);
  victimBlock = block(held.block);
  victimOrdinal = held.ordinal;
  console.log(`victims on ${n2}: ${victims.map((v) => v.status.podIP).join(', ')} in block ${held.cidr}`);

  await waitFor('no spare empty block, every agent routing every node’s blocks', settled, 120_000);
  // from here the default (300 s): the sentinel block, empty, outlives the comparison
  setConfig({ emptyBlockReleaseSeconds: null });
  routesBefore = await waitFor('the routes after the config change', settled, 60_000);
  blocksBefore = blocks()
    .map((b) => b.metadata.name)
    .sort();
  console.log(`routes before the probes: ${JSON.stringify(routesBefore)}`);
  pingVictims();
});

test('the credentials on node 1: the plugin kubeconfig, the agent token, the controller token, a reader', () => {
  const plugin = pluginCredential(n1, '10-blockipam.conflist');
  const agent1 = agentPod(n1);
  const agent = podCredential(n1, NAMESPACE, agent1.name, 'the agent token');
  node = [plugin, agent];
  // the plugin's own account, its token bound to node 1's Node; the agent's, bound to its pod
  for (const [cred, sa] of [
    [plugin, PLUGIN_SA],
    [agent, NODE_SA],
  ] as const)
    assert.deepEqual(
      whoami(cred),
      { username: `system:serviceaccount:${NAMESPACE}:${sa}`, node: n1 },
      cred.what,
    );

  const controllers = pods(NAMESPACE, 'app.kubernetes.io/component=controller').filter(
    (p) => p.status.phase === 'Running',
  );
  const [ctl] = controllers;
  assert.ok(ctl, 'a running controller pod');
  controller = podCredential(n1, NAMESPACE, ctl.metadata.name, 'the controller token');
  assert.equal(whoami(controller).username, `system:serviceaccount:${NAMESPACE}:${CONTROLLER_SA}`);

  kubectlOk(['-n', ns, 'create', 'serviceaccount', READER]);
  kubectlOk([
    'create',
    'clusterrolebinding',
    READER,
    '--clusterrole',
    `${PREFIX}-reader`,
    `--serviceaccount=${ns}:${READER}`,
  ]);
  reader = tokenCredential(n1, READER, kubectlOk(['-n', ns, 'create', 'token', READER]).trim(), 'the reader');
  assert.equal(whoami(reader).username, `system:serviceaccount:${ns}:${READER}`);
  assert.equal(as(reader, ['get', 'ipamblocks']).status, 0, 'the reader reads the blocks');
});

/** One probe: who, what, the call, the refusal expected. */
interface Probe {
  readonly who: Credential;
  readonly what: string;
  readonly run: () => RunResult;
  readonly refusal: RegExp;
  /** For a CREATE: the object to delete (as admin) if it was admitted. */
  readonly created?: string;
  /**
   * Why admission is acceptable (the policy cannot tell the write from one of core's, and core
   * neutralises it); absent: it must be refused. Either way a refusal must match `refusal`.
   */
  readonly tolerated?: string;
}

/**
 * PUT of node 2's block changed by `change` (an object, or JSON text written by hand), on its
 * current version (a conflict is retried). A block already gone (an earlier probe's DELETE
 * admitted) is the admin's failed GET, so the remaining probes still report.
 */
function replaceVictim(cred: Credential, change: (b: IPAMBlock) => IPAMBlock | string): RunResult {
  for (let attempt = 1; ; attempt++) {
    const current = kubectl(['get', 'ipamblock', victimBlock.metadata.name, '-o', 'json']);
    if (current.status !== 0) return current;
    const r = as(cred, ['replace', '-f', '-'], change(JSON.parse(current.stdout) as IPAMBlock));
    if (r.status === 0 || !/the object has been modified/.test(r.stderr) || attempt === 5) return r;
  }
}

/** A date core does not trust (beyond the clock skew): it reads as the epoch. */
const FUTURE = '2099-01-01T00:00:00Z';
/** A finalizer and an annotation of nobody's (core sets neither). */
const FINALIZER = 'x.example/hold';
const ANNOTATION = 'x.example/note';

/** An owner reference to Node `x`, which does not exist: the garbage collector deletes what it owns. */
const ghostOwner = (): NonNullable<IPAMBlock['metadata']['ownerReferences']> => [
  { apiVersion: 'v1', kind: 'Node', name: 'x', uid: randomUUID() },
];

/**
 * `b` as JSON text with spec.sequence written as `digits`: a JSON number JavaScript cannot hold
 * (2^53+1 would be sent as 2^53) goes out exactly as written.
 */
function withRawSequence(b: IPAMBlock, digits: string): string {
  const marker = 'raw-sequence-marker';
  return JSON.stringify({ ...b, spec: { ...b.spec, sequence: marker } }).replace(`"${marker}"`, digits);
}

/**
 * The highest ordinal of node 2's /26 never used (neither allocated nor freed; 63, 0 and 1 are
 * reserved): read when the probe runs, so each credential's tolerated write takes its own.
 */
function unusedOrdinal(b: IPAMBlock): number {
  const freed = new Set(b.spec.freed.map((e) => e.ordinal));
  const ordinal = [...Array(61).keys()]
    .map((i) => 62 - i)
    .find((o) => !(String(o) in b.spec.allocations) && !freed.has(o));
  assert.ok(ordinal !== undefined, `a never-used ordinal in ${b.metadata.name}`);
  return ordinal;
}

/** `b` with a spec.freed entry dated {@link FUTURE} for a never-used ordinal, its sequence grown by `grow`. */
function futureFreed(b: IPAMBlock, grow: number): IPAMBlock {
  const freed = [...b.spec.freed, { ordinal: unusedOrdinal(b), releasedAt: FUTURE }];
  return { ...b, spec: { ...b.spec, sequence: b.spec.sequence + grow, freed } };
}

const allocation = (owner: string): IPAMBlock['spec']['allocations'][string] => ({
  handle: 'k8s-pod-network.attacker.eth0',
  node: owner,
  allocatedAt: rfc3339(Date.now()),
  sequence: 1,
});

/** The node credential's probes (as node 1). */
function nodeProbes(cred: Credential): Probe[] {
  const vb = victimBlock;
  const name = vb.metadata.name;
  const base = parseCidr(vb.spec.cidr);
  assert.ok(base);
  const slice = Math.floor(victimOrdinal / 16) * 16;
  const hijack = claim(`${addressTextAt(base, slice)}/28`, null);
  hijack.spec.allocations = { [String(victimOrdinal - slice)]: allocation(n1) };
  const overlap = claim(`${addressTextAt(base, 0)}/27`, n1);
  const outside = claim('10.250.0.0/26', n1);
  const [forN2, ...rest] = freeCidrs(21);
  assert.equal(rest.length, 20);
  const forNode2 = claim(forN2 ?? '', n2);
  const squatters = rest.map((cidr) => {
    const b = claim(cidr, null);
    b.metadata.labels = { ...b.metadata.labels, [nodeLabel(n2)]: 'affine' };
    return b;
  });
  // an assignable ordinal (2-62 of a /26) nobody holds: the write differs only in whose it is
  const free = [...Array(61).keys()].map((i) => i + 2).find((o) => !(String(o) in vb.spec.allocations)) ?? 62;
  const create = (what: string, o: IPAMBlock, refusal: RegExp): Probe => ({
    who: cred,
    what,
    run: () => as(cred, ['create', '-f', '-'], o),
    refusal,
    created: o.metadata.name,
  });
  const update = (what: string, change: (b: IPAMBlock) => IPAMBlock | string, refusal: RegExp): Probe => ({
    who: cred,
    what,
    run: () => replaceVictim(cred, change),
    refusal,
  });
  const frozen = (field: string): RegExp =>
    new RegExp(`node ${n1} may not change ${field.replace('.', '\\.')} of IPAMBlock ${name}$`, 'm');
  const sequenceGrowth = (budget: number, to: string): RegExp =>
    new RegExp(
      `node ${n1} may grow spec\\.sequence of IPAMBlock ${name} only by what its allocations use \\(${budget}: .*it goes from \\d+ to ${to}$`,
      'm',
    );
  const withMeta = (b: IPAMBlock, meta: Partial<IPAMBlock['metadata']>): IPAMBlock => ({
    ...b,
    metadata: { ...b.metadata, ...meta },
  });
  const others = (ordinal: number): RegExp =>
    new RegExp(
      `node ${n1} may add or remove only its own allocations in IPAMBlock ${name} \\(affine to ${n2}\\); ordinal\\(s\\) ${ordinal} belong to other nodes`,
    );
  const labels = new RegExp(
    `node ${n1} may not change the labels of IPAMBlock ${name} \\(affine to ${n2}\\)`,
  );
  const victimPod = agentPod(n2);
  const isAgent = cred.what === 'the agent token';
  const user = `${NAMESPACE}:${isAgent ? NODE_SA : PLUGIN_SA}`;
  const node2Uid = kubectlOk(['get', 'node', n2, '-o', 'jsonpath={.metadata.uid}']).trim();
  const mint = (sa: string, bound: string[]): RunResult =>
    as(cred, ['create', 'token', sa, '-n', NAMESPACE, ...bound]);
  // the agent may mint only the plugin's tokens bound to its own Node (RBAC + the tokens policy);
  // the plugin's account may mint none
  const tokenRefusal = (policy: RegExp): RegExp =>
    isAgent ? policy : forbidden(user, 'create', 'serviceaccounts/token');
  return [
    // 1. traffic hijack: an unowned /28 inside node 2's /26 holding node 2's pod's ordinal for node 1
    create(
      `an unowned ${hijack.spec.cidr} inside ${vb.spec.cidr} holding ordinal ${victimOrdinal} for ${n1}`,
      hijack,
      new RegExp(
        `node ${n1} may claim IPAMBlock ${hijack.metadata.name} only with spec\\.affinity = itself \\(got none\\)`,
      ),
    ),
    // 2. traffic hijack: a longer prefix affine to node 1 over node 2's block
    create(
      `${overlap.spec.cidr} affine to ${n1} overlapping ${vb.spec.cidr}`,
      overlap,
      new RegExp(
        `may claim IPAMBlock ${overlap.metadata.name} only as a /26 inside ${POOL_RE}; spec\\.cidr is ${overlap.spec.cidr}`,
      ),
    ),
    // 3. maxBlocksPerNode denial of service: 20 unowned blocks labelled affine to node 2
    ...squatters.map((b) =>
      create(
        `unowned ${b.spec.cidr} labelled affine to ${n2}`,
        b,
        new RegExp(
          `node ${n1} may claim IPAMBlock ${b.metadata.name} only with spec\\.affinity = itself \\(got none\\)`,
        ),
      ),
    ),
    // 4. a block outside every pool; a claim for another node
    create(
      `${outside.spec.cidr} outside every pool`,
      outside,
      new RegExp(
        `may claim IPAMBlock 10-250-0-0-26 only as a /26 inside ${POOL_RE}; spec\\.cidr is 10\\.250\\.0\\.0/26`,
      ),
    ),
    create(
      `${forNode2.spec.cidr} claimed for ${n2}`,
      forNode2,
      new RegExp(`only with spec\\.affinity = itself \\(got ${n2}\\)|would go from none to ${n2}`),
    ),
    // 5. the update and delete paths on node 2's block, and tokens
    update(
      `add an allocation for ${n3} at ordinal ${free}`,
      (b) => ({
        ...b,
        spec: { ...b.spec, allocations: { ...b.spec.allocations, [String(free)]: allocation(n3) } },
      }),
      others(free),
    ),
    update(
      `take over ${n2}'s pod's ordinal ${victimOrdinal} for ${n1}`,
      (b) => ({
        ...b,
        spec: { ...b.spec, allocations: { ...b.spec.allocations, [String(victimOrdinal)]: allocation(n1) } },
      }),
      others(victimOrdinal),
    ),
    update(
      `remove ${n2}'s pod's allocation at ordinal ${victimOrdinal}`,
      (b) => {
        const { [String(victimOrdinal)]: _gone, ...kept } = b.spec.allocations;
        return { ...b, spec: { ...b.spec, allocations: kept } };
      },
      others(victimOrdinal),
    ),
    update(
      `affinity ${n2} → ${n1}`,
      (b) => ({ ...b, spec: { ...b.spec, affinity: n1 } }),
      new RegExp(`IPAMBlock ${name} would go from ${n2} to ${n1}`),
    ),
    update(
      `affinity ${n2} → none`,
      (b) => ({ ...b, spec: { ...b.spec, affinity: null } }),
      new RegExp(`IPAMBlock ${name} would go from ${n2} to none`),
    ),
    update(
      `labels: ${n2}'s node label → ${n1}'s`,
      (b) => {
        const { [nodeLabel(n2)]: _n2, ...kept } = b.metadata.labels ?? {};
        return { ...b, metadata: { ...b.metadata, labels: { ...kept, [nodeLabel(n1)]: 'affine' } } };
      },
      labels,
    ),
    update(
      'labels: another pool',
      (b) => ({
        ...b,
        metadata: { ...b.metadata, labels: { ...b.metadata.labels, 'ipam.blockipam.io/pool': 'elsewhere' } },
      }),
      labels,
    ),
    // the wipe: an owner that does not exist, and the garbage collector deletes the block
    update(
      'metadata.ownerReferences: a Node that does not exist',
      (b) => withMeta(b, { ownerReferences: ghostOwner() }),
      frozen('metadata.ownerReferences'),
    ),
    // a delete of the block would hang; core would stop allocating from it (frozen)
    update(
      `metadata.finalizers: ${FINALIZER}`,
      (b) => withMeta(b, { finalizers: [FINALIZER] }),
      frozen('metadata.finalizers'),
    ),
    update(
      `metadata.annotations: ${ANNOTATION}`,
      (b) => withMeta(b, { annotations: { ...b.metadata.annotations, [ANNOTATION]: 'mine' } }),
      frozen('metadata.annotations'),
    ),
    // a sequence JSON cannot carry (2^53+1 reads as 2^53: every CAS write after it refused)
    update(
      'spec.sequence → 2^53+1 (raw JSON)',
      (b) => withRawSequence(b, '9007199254740993'),
      /spec\.sequence: Invalid value: 9007199254740993: .*less than or equal to 9007199254740991/,
    ),
    // the largest the CRD takes, above 2^52: core would freeze the block (node 2 claims another)
    update(
      'spec.sequence → 2^53−1',
      (b) => ({ ...b, spec: { ...b.spec, sequence: Number.MAX_SAFE_INTEGER } }),
      sequenceGrowth(0, String(Number.MAX_SAFE_INTEGER)),
    ),
    // an ordinal hidden behind a date that never comes (before: never cooled)
    update(
      `spec.freed: a never-used ordinal released at ${FUTURE}, sequence unchanged`,
      (b) => futureFreed(b, 0),
      new RegExp(
        `node ${n1} may grow spec\\.sequence of IPAMBlock ${name} only by what its allocations use \\(1: .*it goes from (\\d+) to \\1$`,
        'm',
      ),
    ),
    {
      ...update(
        `spec.freed: a never-used ordinal released at ${FUTURE}, sequence + 1`,
        (b) => futureFreed(b, 1),
        new RegExp(`node ${n1} may (grow spec\\.sequence|change spec\\.freed) of IPAMBlock ${name} `),
      ),
      tolerated:
        'the same write as a batched allocate-and-release of its own (CEL has no clock); core reads the date as the epoch',
    },
    // the claim time decides which of two claims stands, and when an empty block goes
    update(
      `spec.affinityClaimTime → ${FUTURE}`,
      (b) => ({ ...b, spec: { ...b.spec, affinityClaimTime: FUTURE } }),
      new RegExp(
        `node ${n1} may change a block's affinity only from itself to none \\(and affinityClaimTime only with it\\); IPAMBlock ${name} would go from ${n2} to ${n2}`,
      ),
    ),
    {
      who: cred,
      what: 'merge PATCH: metadata.ownerReferences',
      run: () =>
        as(cred, [
          'patch',
          'ipamblock',
          name,
          '--type=merge',
          '-p',
          JSON.stringify({ metadata: { ownerReferences: ghostOwner() } }),
        ]),
      refusal: forbidden(user, 'patch', 'ipamblocks'),
    },
    {
      who: cred,
      what: `delete ${name}`,
      run: () => as(cred, ['delete', 'ipamblock', name]),
      refusal: new RegExp(
        `node ${n1} may delete only an empty IPAMBlock that is its own or unowned; ${name} is affine to ${n2} and holds \\d+ allocation\\(s\\)`,
      ),
    },
    {
      who: cred,
      what: `mint a plugin token bound to ${n2}'s Node`,
      run: () =>
        mint(PLUGIN_SA, [
          '--bound-object-kind',
          'Node',
          '--bound-object-name',
          n2,
          '--bound-object-uid',
          node2Uid,
        ]),
      refusal: tokenRefusal(
        new RegExp(`may request tokens only bound to its own Node ${n1}; this one is bound to Node ${n2}`),
      ),
    },
    {
      who: cred,
      what: 'mint an unbound plugin token',
      run: () => mint(PLUGIN_SA, []),
      refusal: tokenRefusal(
        new RegExp(`may request tokens only bound to its own Node ${n1}; this one is unbound`),
      ),
    },
    {
      who: cred,
      what: `mint a node token bound to ${n2}'s agent pod ${victimPod.name}`,
      run: () =>
        mint(NODE_SA, [
          '--bound-object-kind',
          'Pod',
          '--bound-object-name',
          victimPod.name,
          '--bound-object-uid',
          victimPod.uid,
        ]),
      refusal: forbidden(user, 'create', 'serviceaccounts/token'),
    },
    {
      who: cred,
      what: `delete IPPool ${POOL}`,
      run: () => as(cred, ['delete', 'ippool', POOL]),
      refusal: forbidden(user, 'delete', 'ippools'),
    },
    // 6. the route source, the Trusted condition and the claimable pools: the controller's only
    ...controllerWrites(cred, user),
  ];
}

function ipamNode(name: string): IPAMNode {
  return JSON.parse(kubectlOk(['get', 'ipamnode', name, '-o', 'json'])) as IPAMNode;
}

/**
 * Writes only the controller makes, tried by `cred` (account `user`): node 2's IPAMNode (create,
 * point at node 1's address, delete), node 1's own IPAMNode (add node 2's block: every agent
 * would route it to node 1), node 2's block's `Trusted` condition (False: the data path would
 * ignore it), and the claimable-pools ConfigMap (a pool of the attacker's). RBAC refuses each.
 */
function controllerWrites(cred: Credential, user: string): Probe[] {
  const theirs = ipamNode(n2);
  const mine = ipamNode(n1);
  const n1Address = cluster().nodeIps[cluster().nodes.indexOf(n1)] ?? '';
  const fresh: IPAMNode = {
    apiVersion: theirs.apiVersion,
    kind: 'IPAMNode',
    metadata: { name: n2 },
    spec: theirs.spec,
  };
  const untrusted = {
    ...victimBlock,
    status: {
      conditions: [
        {
          type: 'Trusted',
          status: 'False',
          reason: 'Overlaps',
          message: 'the attacker says so',
          lastTransitionTime: rfc3339(Date.now()),
        },
      ],
    },
  };
  const pools = `${PREFIX}-claim-pools`;
  // a PUT of the published list plus a pool of the attacker's (kubectl patch would GET first)
  const current = JSON.parse(kubectlOk(['-n', NAMESPACE, 'get', 'configmap', pools, '-o', 'json'])) as {
    data?: Record<string, string>;
  };
  const hostilePools = { ...current, data: { ...current.data, attacker: '10.250.0.0/16 26 usable' } };
  return [
    {
      who: cred,
      what: `create IPAMNode ${n2}`,
      run: () => as(cred, ['create', '-f', '-'], fresh),
      refusal: forbidden(user, 'create', 'ipamnodes'),
    },
    {
      who: cred,
      what: `IPAMNode ${n2}'s address → ${n1}'s (${n1Address})`,
      run: () =>
        as(cred, ['replace', '-f', '-'], { ...theirs, spec: { ...theirs.spec, addresses: [n1Address] } }),
      refusal: forbidden(user, 'update', 'ipamnodes'),
    },
    {
      who: cred,
      what: `IPAMNode ${n1} (its own) + ${n2}'s block ${victimBlock.spec.cidr}`,
      run: () =>
        as(cred, ['replace', '-f', '-'], {
          ...mine,
          spec: { ...mine.spec, blocks: [...mine.spec.blocks, victimBlock.spec.cidr].sort() },
        }),
      refusal: forbidden(user, 'update', 'ipamnodes'),
    },
    {
      who: cred,
      what: `delete IPAMNode ${n2}`,
      run: () => as(cred, ['delete', 'ipamnode', n2]),
      refusal: forbidden(user, 'delete', 'ipamnodes'),
    },
    {
      who: cred,
      what: `${victimBlock.metadata.name}'s status: Trusted False`,
      run: () => as(cred, ['replace', '--subresource=status', '-f', '-'], untrusted),
      refusal: forbidden(user, 'update', 'ipamblocks/status'),
    },
    {
      who: cred,
      what: `ConfigMap ${pools}: a pool 10.250.0.0/16 of its own`,
      run: () => as(cred, ['replace', '-f', '-'], hostilePools),
      refusal: forbidden(user, 'update', 'configmaps'),
    },
  ];
}

function forbidden(user: string, verb: string, resource: string): RegExp {
  return new RegExp(`User "system:serviceaccount:${user}" cannot ${verb} resource "${resource}"`);
}

/** The controller's and the reader's probes: RBAC refuses them. */
function otherProbes(): Probe[] {
  const victimPod = agentPod(n2);
  const [cidr] = freeCidrs(1);
  const stray = claim(cidr ?? '', n2);
  const tokenArgs = [
    'create',
    'token',
    NODE_SA,
    '-n',
    NAMESPACE,
    '--bound-object-kind',
    'Pod',
    '--bound-object-name',
    victimPod.name,
    '--bound-object-uid',
    victimPod.uid,
  ];
  const c = `${NAMESPACE}:${CONTROLLER_SA}`;
  const r = `${ns}:${READER}`;
  const name = victimBlock.metadata.name;
  return [
    {
      who: controller,
      what: `mint a token bound to ${victimPod.name}`,
      run: () => as(controller, tokenArgs),
      refusal: forbidden(c, 'create', 'serviceaccounts/token'),
    },
    {
      who: reader,
      what: `create ${stray.spec.cidr} for ${n2}`,
      run: () => as(reader, ['create', '-f', '-'], stray),
      refusal: forbidden(r, 'create', 'ipamblocks'),
      created: stray.metadata.name,
    },
    {
      who: reader,
      what: `affinity of ${name} → ${n1}`,
      run: () => replaceVictim(reader, (b) => ({ ...b, spec: { ...b.spec, affinity: n1 } })),
      refusal: forbidden(r, 'update', 'ipamblocks'),
    },
    {
      who: reader,
      what: `delete ${name}`,
      run: () => as(reader, ['delete', 'ipamblock', name]),
      refusal: forbidden(r, 'delete', 'ipamblocks'),
    },
    {
      who: reader,
      what: `mint a token bound to ${victimPod.name}`,
      run: () => as(reader, tokenArgs),
      refusal: forbidden(r, 'create', 'serviceaccounts/token'),
    },
    {
      who: reader,
      what: `disable IPPool ${POOL}`,
      run: () => as(reader, ['patch', 'ippool', POOL, '--type=merge', '-p', '{"spec":{"disabled":true}}']),
      refusal: forbidden(r, 'patch', 'ippools'),
    },
    {
      who: reader,
      what: 'lower maxBlocksPerNode to 1',
      run: () =>
        as(reader, [
          'patch',
          'ipamconfig',
          'default',
          '--type=merge',
          '-p',
          '{"spec":{"maxBlocksPerNode":1}}',
        ]),
      refusal: forbidden(r, 'patch', 'ipamconfigs'),
    },
    ...controllerWrites(reader, r),
  ];
}

/**
 * "<credential> <count>" for each credential in probe order, as docs/install.md §Security states
 * it: the test counts, the doc must agree.
 */
function probeCounts(probes: readonly Probe[]): string {
  const counts = new Map<string, number>();
  for (const p of probes) counts.set(p.who.what, (counts.get(p.who.what) ?? 0) + 1);
  return [...counts].map(([who, n]) => `${who} ${n}`).join(', ');
}

test('every probe is refused (the tolerated one may be admitted), naming what is wrong', () => {
  const probes = [...node.flatMap(nodeProbes), ...otherProbes()];
  const admitted: string[] = [];
  const wrong: string[] = [];
  for (const p of probes) {
    const r = p.run();
    const answer = (r.stderr.trim().split('\n').pop() ?? '').replace(/^Error from server \(\w+\): /, '');
    console.log(
      `probe [${p.who.what}] ${p.what}: ${r.status === 0 ? `ADMITTED${p.tolerated ? ` (tolerated: ${p.tolerated})` : ''}` : answer}`,
    );
    if (r.status === 0 && p.tolerated) toleratedAdmitted += 1;
    else if (r.status === 0) {
      admitted.push(`${p.who.what}: ${p.what}`);
      if (p.created) kubectl(['delete', 'ipamblock', p.created]);
    } else if (!p.refusal.test(r.stderr)) wrong.push(`${p.who.what}: ${p.what}: ${r.stderr.trim()}`);
  }
  assert.deepEqual(admitted, [], 'admitted probes');
  assert.deepEqual(wrong, [], 'probes refused with another message than expected');
  const stated = `Probes per credential: ${probeCounts(probes)}.`;
  console.log(stated);
  assert.ok(
    readFileSync(new URL('../../docs/install.md', import.meta.url), 'utf8')
      .replace(/\s+/g, ' ')
      .includes(stated),
    `docs/install.md §Security states "${stated}"`,
  );
});

/**
 * The freed entries dated {@link FUTURE} the tolerated probes left in node 2's block: `ipamctl
 * check` names each (future-date); the admin removes them (compare-and-swap). The sequence they
 * grew stays (a safe sequence never decreases): returns by how much.
 */
function undoTolerated(): number {
  const name = victimBlock.metadata.name;
  const dated = block(name).spec.freed.filter((e) => e.releasedAt === FUTURE);
  assert.equal(
    dated.length,
    toleratedAdmitted,
    `${name}: one freed entry dated ${FUTURE} per tolerated write`,
  );
  if (dated.length === 0) return 0;
  const { report } = checkReport();
  const said = report.problems.filter(
    (p) => p.kind === 'future-date' && p.objects.includes(`IPAMBlock/${name}`),
  );
  console.log(`ipamctl check after the tolerated writes: ${said.map((p) => p.message).join(' | ')}`);
  for (const { ordinal } of dated)
    assert.ok(
      said.some((p) => p.message.includes(`freed ordinal ${ordinal} releasedAt ${FUTURE} is in the future`)),
      `ipamctl check names ${name}'s ordinal ${ordinal}: ${JSON.stringify(report.problems)}`,
    );
  for (let attempt = 1; ; attempt++) {
    const b = block(name);
    const freed = b.spec.freed.filter((e) => e.releasedAt !== FUTURE);
    const r = kubectl(['replace', '-f', '-'], JSON.stringify({ ...b, spec: { ...b.spec, freed } }));
    if (r.status === 0) break;
    assert.ok(/the object has been modified/.test(r.stderr) && attempt < 5, r.stderr);
  }
  return dated.length;
}

test('nothing moved: node 2’s block, the blocks, every agent’s routes (before + a sentinel = after); the victims answer', async () => {
  const grown = undoTolerated();
  const now = block(victimBlock.metadata.name);
  assert.deepEqual(
    now.spec,
    { ...victimBlock.spec, sequence: victimBlock.spec.sequence + grown },
    `${victimBlock.metadata.name} unchanged (but the sequence the tolerated writes grew)`,
  );
  // still there, nothing of anyone's on it: the garbage collector had no owner to act on
  assert.deepEqual(
    {
      uid: now.metadata.uid,
      deletionTimestamp: now.metadata.deletionTimestamp,
      ownerReferences: now.metadata.ownerReferences,
      finalizers: now.metadata.finalizers,
      annotations: now.metadata.annotations,
    },
    {
      uid: victimBlock.metadata.uid,
      deletionTimestamp: undefined,
      ownerReferences: undefined,
      finalizers: undefined,
      annotations: victimBlock.metadata.annotations,
    },
    `${victimBlock.metadata.name}'s metadata`,
  );
  assert.deepEqual(
    blocks()
      .map((b) => b.metadata.name)
      .sort(),
    blocksBefore,
    'no block appeared or went',
  );

  // the event: a block created for node 1 after the probes, routed by every agent
  const [cidr] = freeCidrs(1);
  const sentinel = claim(cidr ?? '', n1);
  kubectlOk(['create', '-f', '-'], JSON.stringify(sentinel));
  const after = await waitFor(
    `every agent routing the sentinel ${sentinel.spec.cidr}`,
    () => {
      const routes = allAgentRoutes();
      return Object.entries(routes).every(([at, rs]) => hasBlockRoute(at, rs, sentinel.spec.cidr, n1))
        ? routes
        : undefined;
    },
    120_000,
  );
  console.log(`routes after the probes and the sentinel ${sentinel.spec.cidr}: ${JSON.stringify(after)}`);
  for (const n of cluster().nodes) {
    const added = (after[n] ?? []).filter((r) => !(routesBefore[n] ?? []).includes(r));
    const gone = (routesBefore[n] ?? []).filter((r) => !(after[n] ?? []).includes(r));
    assert.deepEqual(gone, [], `${n}: routes gone`);
    assert.equal(added.length, 1, `${n}: only the sentinel's route added: ${added.join('; ')}`);
    assert.ok(hasBlockRoute(n, added, sentinel.spec.cidr, n1), `${n}: ${added.join('; ')}`);
  }
  pingVictims();
  kubectlOk(['delete', 'ipamblock', sentinel.metadata.name, '--ignore-not-found']);
});

test('the wipe is real here: the garbage collector deletes a block whose owner does not exist', async () => {
  // what the ownerReferences probes would have done to node 2's block, on an empty unowned one
  const [cidr] = freeCidrs(1);
  const doomed = claim(cidr ?? '', null);
  doomed.metadata.ownerReferences = ghostOwner();
  kubectlOk(['create', '-f', '-'], JSON.stringify(doomed));
  await waitFor(
    `kube-controller-manager's garbage collector deleting ${doomed.metadata.name}`,
    () => (kubectl(['get', 'ipamblock', doomed.metadata.name]).status !== 0 ? true : undefined),
    120_000,
  );
});

test('node 2’s agent still pre-claims a block and releases it when idle; ipamctl check is clean', async () => {
  const affine = (): IPAMBlock[] => blocks().filter((b) => b.spec.affinity === n2);
  const held = affine();
  const names = new Set(held.map((b) => b.metadata.name));
  // a watermark above node 2's free addresses: its agent claims one block more
  setConfig({ minFreeAddressesPerNode: 64 * held.length });
  const claimed = await waitFor(
    `${n2}'s agent claiming a block beyond ${held.length}`,
    () => affine().find((b) => !names.has(b.metadata.name)),
    120_000,
  );
  console.log(`${n2} pre-claimed ${claimed.spec.cidr} after the probes`);
  await waitFor(
    `${n1} and ${n3} routing ${claimed.spec.cidr} to ${n2}`,
    () =>
      [n1, n3].every((n) => hasBlockRoute(n, allAgentRoutes()[n] ?? [], claimed.spec.cidr, n2))
        ? true
        : undefined,
    120_000,
  );
  setConfig({ minFreeAddressesPerNode: null, emptyBlockReleaseSeconds: 0 });
  await waitFor(
    `${n2}'s agent releasing the idle ${claimed.spec.cidr}`,
    () => (kubectl(['get', 'ipamblock', claimed.metadata.name]).status !== 0 ? true : undefined),
    120_000,
  );
  setConfig({ emptyBlockReleaseSeconds: null });
  await checkClean();
});

/** The one block of pool `tiny` (a /29 pool of /29 blocks), once a node has claimed it. */
const TINY = { name: 'tiny', cidr: '10.245.0.0/29' };

/** A busybox pod on `on` whose address comes from pool `tiny` (the pod annotation). */
function tinyPod(name: string, on: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { app: 'tiny' },
      annotations: { [POOLS_ANNOTATION]: JSON.stringify([TINY.name]) },
    },
    spec: {
      terminationGracePeriodSeconds: 1,
      nodeSelector: { 'kubernetes.io/hostname': on },
      containers: [busybox('sleep', ['sleep', '3600'])],
    },
  };
}

function runningPod(name: string): Promise<PodObject> {
  return waitFor(
    `pod ${name} Running with an address`,
    () => pods(ns).find((p) => p.metadata.name === name && p.status.phase === 'Running' && p.status.podIP),
    300_000,
  );
}

test('borrowing under the policy: node 3 borrows from node 2’s only block of a one-block pool; routed', async () => {
  kubectlOk(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: TINY.name },
      spec: { cidr: TINY.cidr, blockSize: 29, assignmentMode: 'Manual' },
    }),
  );
  // the event the claims policy waits on: the controller lists the pool as claimable
  await waitFor(
    `pool ${TINY.name} usable in ${PREFIX}-claim-pools`,
    () => {
      const r = kubectl(['-n', NAMESPACE, 'get', 'configmap', `${PREFIX}-claim-pools`, '-o', 'json']);
      const data =
        r.status === 0 ? (JSON.parse(r.stdout) as { data?: Record<string, string> }).data : undefined;
      return data?.[TINY.name] === `${TINY.cidr} 29 usable` ? true : undefined;
    },
    120_000,
  );
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(tinyPod('tiny-owner', n2)));
  const owner = await runningPod('tiny-owner');
  const tinyBlock = claim(TINY.cidr, null).metadata.name;
  assert.equal(block(tinyBlock).spec.affinity, n2, `${n2} claimed ${TINY.cidr}, the pool's only block`);
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(tinyPod('tiny-borrower', n3)));
  const borrower = await runningPod('tiny-borrower');
  const ip = borrower.status.podIP ?? '';
  assert.ok(inCidr(ip, TINY.cidr), `the borrower's ${ip} is in ${TINY.cidr}`);
  const held = allocations().find((a) => a.pod === 'tiny-borrower');
  assert.ok(held, `tiny-borrower (${ip}) has an allocation`);
  assert.deepEqual(
    { block: held.block, affinity: held.affinity, node: held.node },
    { block: tinyBlock, affinity: n2, node: n3 },
    'the borrower holds an address of node 2’s block, for node 3',
  );
  // the borrowed address is routed to node 3 on the others (longer than node 2's blackhole)
  const via = `${ip} via ${cluster().nodeIps[cluster().nodes.indexOf(n3)]} `;
  await waitFor(
    `${n1} and ${n2} routing ${ip} via ${n3}`,
    () => {
      const routes = allAgentRoutes();
      return [n1, n2].every((n) => (routes[n] ?? []).some((r) => `${r} `.startsWith(via))) ? true : undefined;
    },
    120_000,
  );
  const r = ping(owner, ip);
  assert.equal(r.status, 0, `${n2} tiny-owner → ${n3} tiny-borrower (${ip}): ${r.stdout}${r.stderr}`);
});

test('leak GC under the policy: the controller releases an allocation whose pod does not exist', async () => {
  // 1 s (0 turns leak reclaiming off): released at the first pass a second after it is seen
  setConfig({ leakGracePeriodSeconds: 1 });
  const network = victimBlock.spec.allocations[String(victimOrdinal)]?.network ?? 'k8s-pod-network';
  const handle = `${network}.${'0'.repeat(60)}dead.eth0`;
  for (let attempt = 1; ; attempt++) {
    const b = block(victimBlock.metadata.name);
    const free = [...Array(64).keys()].find(
      (o) =>
        o > 0 && o < 63 && !(String(o) in b.spec.allocations) && !b.spec.freed.some((f) => f.ordinal === o),
    );
    assert.ok(free !== undefined, `a never-used ordinal in ${b.metadata.name}`);
    const sequence = b.spec.sequence + 1;
    const leaked = {
      ...b,
      spec: {
        ...b.spec,
        sequence,
        allocations: {
          ...b.spec.allocations,
          [String(free)]: {
            handle,
            network,
            namespace: ns,
            pod: 'gone',
            podUID: '00000000-0000-4000-8000-000000000000',
            node: n2,
            allocatedAt: rfc3339(Date.now()),
            sequence,
          },
        },
      },
    };
    const r = kubectl(['replace', '-f', '-'], JSON.stringify(leaked));
    if (r.status === 0) break;
    assert.ok(/the object has been modified/.test(r.stderr) && attempt < 5, r.stderr);
  }
  await waitFor(
    `the controller releasing ${handle}`,
    () => (allocations().some((a) => a.handle === handle) ? undefined : true),
    180_000,
  );
  setConfig({ leakGracePeriodSeconds: null });
});

test('pods gone, helm uninstall', async () => {
  // pods before the uninstall: their DELs need the plugin's token, which dies with the agents
  kubectlOk(['-n', ns, 'delete', 'deployments,pods', '--all']);
  await waitFor('the test pods gone', () => (pods(ns).length === 0 ? true : undefined), 120_000);
  helmOk(['uninstall', RELEASE, '--namespace', NAMESPACE, '--wait']);
});

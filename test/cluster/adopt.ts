/**
 * Adopting a kind-shaped cluster in place (docs/design-adopt.md, docs/install.md §Adopting a
 * host-local cluster), the scenario shared by adopt-host-local.int.test.ts (30 pods, every check)
 * and test/bench/adopt-bench.ts (300 pods, the figures), on a cluster started with up.sh
 * --pod-network kind (ptp + host-local on each node's podCIDR, state in /run/cni-ipam-state/kindnet,
 * static routes to the other podCIDRs):
 *
 * - pods run on host-local, two of them pinging pods on other nodes every 200 ms throughout;
 * - the chart goes in with a podCIDR pool and `adopt.hostLocalStore`: no node changes network, the
 *   controller creates every node's podCIDR block, `ipamctl adopt plan` is clean;
 * - node by node, `blockipam.io/adopt=true`: the agent imports every pod's address under the
 *   handle its DEL computes and writes its conflist; on the second node the agent is SIGKILLed
 *   right after the label, and its successor ends in the same state; `ipamctl adopt finalize`
 *   exits 1 naming the last node until it is adopted, then 0;
 * - then every pod holds its old address, exactly once, the agents hold the routes to the other
 *   podCIDRs (taken over from the harness's static ones, which stand in for kindnetd's), and (with `checks`) new pods get addresses
 *   of their node's podCIDR block, each with host-local's file; an old pod's DEL releases its
 *   imported address and file; `ipamctl check` is clean; rolling the last node back (the label
 *   removed) takes its conflist away, a new pod there gets its address from host-local again, and
 *   no address is held twice.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { inNode, kubectl, kubectlOk, type Cluster } from '../helpers/cluster.ts';
import {
  addressOf,
  allocations,
  busybox,
  checkClean,
  inCidr,
  ipamctl,
  pinnedDeployment,
  pods,
  podsRunning,
  spreadDeployment,
  waitFor,
  type PodObject,
} from './blockipam.ts';
import { installWithPluginLog, setUpChart, waitRolledOut } from './chart.ts';
import { agentBack, assertLedger, killAgent } from './faults.ts';

const ns = 'adopt';
const STORE = '/run/cni-ipam-state/kindnet';

/** The conflist the agent writes, as the host sees node `node`'s CNI folder. */
const conflistOf = (c: Cluster, node: string): string =>
  join(c.runDir, node, 'cni', 'net.d', '10-blockipam.conflist');

/** host-local's file for `ip` on `node`: its content, or undefined when there is none. */
function storeFile(node: string, ip: string): string | undefined {
  const r = inNode(node, 'cat', [`${STORE}/${ip}`]);
  return r.status === 0 ? r.stdout : undefined;
}

/** The pod's sandbox ID on its node (containerd's label of the CRI sandbox container). */
function sandboxOf(pod: PodObject): string {
  const filter = `labels."io.kubernetes.pod.uid"==${pod.metadata.uid},labels."io.cri-containerd.kind"==sandbox`;
  const script = 'ctr --address "$CONTAINERD" -n k8s.io containers ls -q "$1"';
  const r = inNode(pod.spec.nodeName ?? '', 'sh', ['-c', script, 'sh', filter]);
  return r.stdout.split('\n').filter(Boolean)[0] ?? '';
}

/** A pod on `node` pinging `ip` every 200 ms until it is deleted (busybox: one line per reply). */
function pinger(name: string, node: string, ip: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'pinger' } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [busybox('ping', ['ping', '-i', '0.2', ip])],
    },
  };
}

/** Replies and requests of a pinger so far, from its log: requests = the highest seq + 1. */
function pings(name: string): { sent: number; received: number } {
  const log = kubectlOk(['-n', ns, 'logs', name]);
  const seqs = [...log.matchAll(/seq=(\d+)/g)].map((m) => Number(m[1]));
  return { sent: seqs.length === 0 ? 0 : Math.max(...seqs) + 1, received: new Set(seqs).size };
}

/** The allocations of `ns`'s pods on `node` by address. */
const importedOn = (node: string): Map<string, string> =>
  new Map(
    allocations()
      .filter((a) => a.namespace === ns && a.node === node)
      .map((a) => [addressOf(a), a.handle]),
  );

/**
 * Labels `node` (SIGKILLing its agent right after with `kill`) and waits until its pods' addresses
 * are held by the handles their DELs compute and its conflist is there.
 * @returns ms from the label to that state (polled every 200 ms)
 */
async function adoptNode(
  c: Cluster,
  node: string,
  running: readonly PodObject[],
  kill: boolean,
): Promise<number> {
  const want = new Map(
    running
      .filter((p) => p.spec.nodeName === node)
      .map((p) => [p.status.podIP ?? '', `blockipam.${sandboxOf(p)}.eth0`]),
  );
  const started = Date.now();
  kubectlOk(['label', 'node', node, 'blockipam.io/adopt=true']);
  if (kill) {
    const { restarts } = killAgent(node);
    await agentBack(node, restarts);
  }
  await waitFor(
    `${node}'s ${want.size} pods imported and its conflist written`,
    () => {
      const held = importedOn(node);
      const all = [...want].every(([ip, handle]) => held.get(ip) === handle);
      return all && existsSync(conflistOf(c, node)) ? true : undefined;
    },
    180_000,
    200,
  );
  return Date.now() - started;
}

/** What a run measured. */
export interface AdoptionFigures {
  readonly pods: number;
  /** ms from each node's label to its pods imported and its conflist written, in node order. */
  readonly adoptMs: readonly number[];
  /** Which node's agent was SIGKILLed right after its label (index into adoptMs). */
  readonly killed: number;
  readonly pings: readonly { readonly name: string; readonly sent: number; readonly received: number }[];
}

/**
 * The scenario on `c` (a fresh kind-shaped cluster): `podsPerNode` pods per node adopted, and with
 * `checks` every check after it (new pods, an old pod's DEL, ipamctl check, no ping lost, rollback).
 * @throws AssertionError naming what did not hold
 */
export async function adoptionScenario(
  c: Cluster,
  options: { readonly podsPerNode: number; readonly checks: boolean },
): Promise<AdoptionFigures> {
  const PODS = options.podsPerNode * c.nodes.length;
  const podCidr = new Map(
    c.nodes.map((n) => [n, kubectlOk(['get', 'node', n, '-o', 'jsonpath={.spec.podCIDR}']).trim()]),
  );
  kubectlOk(['create', 'namespace', ns]);
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment('old', PODS, 1)));
  const old = await podsRunning(ns, 'old', PODS, 600_000);
  const on = (node: string): PodObject => old.find((p) => p.spec.nodeName === node) ?? assert.fail(node);
  const [n1, n2, n3] = c.nodes as [string, string, string];
  for (const [name, from, to] of [
    ['ping-a', n1, n2],
    ['ping-b', n3, n1],
  ] as const)
    kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinger(name, from, on(to).status.podIP ?? '')));
  const pingers = await podsRunning(ns, 'pinger', 2, 120_000);
  const before = [...old, ...pingers];

  // the chart: no node switches, every node's podCIDR becomes its block
  const image = setUpChart();
  installWithPluginLog(image, {
    set: [
      `adopt.hostLocalStore=${STORE}`,
      'adopt.graceSeconds=30',
      'pools[0].name=kind',
      'pools[0].cidr=10.244.0.0/16',
      'pools[0].blockSize=24',
      'pools[0].podCIDRBlocks=true',
      'cni.mtu=1400',
    ],
  });
  waitRolledOut();
  for (const node of c.nodes)
    assert.ok(!existsSync(conflistOf(c, node)), `${node}: no conflist before its label`);
  await waitFor(
    'every node’s podCIDR block',
    () => {
      const blocks = JSON.parse(kubectlOk(['get', 'ipamblocks', '-o', 'json'])) as {
        items: { spec: { cidr: string; affinity: string | null } }[];
      };
      return c.nodes.every((n) =>
        blocks.items.some((b) => b.spec.cidr === podCidr.get(n) && b.spec.affinity === n),
      )
        ? true
        : undefined;
    },
    120_000,
    1000,
  );
  const plan = ipamctl(['adopt', 'plan']);
  assert.equal(plan.status, 0, `adopt plan:\n${plan.stdout}${plan.stderr}`);

  // node by node; the second one's agent SIGKILLed right after its label
  const took = [await adoptNode(c, n1, before, false), await adoptNode(c, n2, before, true)];
  const early = ipamctl(['adopt', 'finalize']);
  assert.equal(early.status, 1, `finalize before ${n3} is adopted:\n${early.stdout}${early.stderr}`);
  assert.match(early.stdout + early.stderr, new RegExp(`kubectl label node ${n3} blockipam.io/adopt=true`));
  took.push(await adoptNode(c, n3, before, false));
  const ready = ipamctl(['adopt', 'finalize']);
  assert.equal(ready.status, 0, `finalize once every node is adopted:\n${ready.stdout}${ready.stderr}`);
  const adopted = await podsRunning(ns, 'old', PODS, 60_000);
  assert.deepEqual(
    adopted.map((p) => `${p.metadata.name} ${p.status.podIP}`).sort(),
    old.map((p) => `${p.metadata.name} ${p.status.podIP}`).sort(),
    'every old pod runs on with its address',
  );
  assertLedger(ns, [...adopted, ...pods(ns, 'app=pinger')]);
  // the routes to the other podCIDRs, kindnetd's (here the harness's), are the agents' now
  for (const node of c.nodes)
    await waitFor(
      `${node}'s routes to the other podCIDRs taken over`,
      () => {
        const ours = inNode(node, 'ip', ['-4', 'route', 'show', 'proto', '210']).stdout;
        return c.nodes.every((o, j) => o === node || ours.includes(`${podCidr.get(o)} via ${c.nodeIps[j]} `))
          ? true
          : undefined;
      },
      30_000,
      500,
    );
  const figures = (): AdoptionFigures => ({
    pods: PODS + 2,
    adoptMs: took,
    killed: 1,
    pings: ['ping-a', 'ping-b'].map((name) => ({ name, ...pings(name) })),
  });
  if (!options.checks) return figures();

  // new pods: from their node's podCIDR block, each address reserved in host-local's store too
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment('new', 6, 1)));
  const fresh = await podsRunning(ns, 'new', 6, 180_000);
  for (const p of fresh) {
    const node = p.spec.nodeName ?? '';
    assert.ok(
      inCidr(p.status.podIP ?? '', podCidr.get(node) ?? ''),
      `${p.metadata.name} in ${node}'s podCIDR`,
    );
    assert.equal(
      storeFile(node, p.status.podIP ?? ''),
      `${sandboxOf(p)}\r\neth0`,
      `${p.metadata.name}'s file`,
    );
  }
  assertLedger(ns, [...adopted, ...fresh, ...pods(ns, 'app=pinger')]);

  // an old pod's DEL releases its imported address and its file
  const gone = adopted.find(
    (p) => p.spec.nodeName === n2 && !['ping-a', 'ping-b'].includes(p.metadata.name),
  )!;
  kubectlOk(['-n', ns, 'delete', 'pod', gone.metadata.name, '--wait=true']);
  await waitFor(
    `${gone.status.podIP} released`,
    () =>
      !allocations().some((a) => addressOf(a) === gone.status.podIP) &&
      storeFile(n2, gone.status.podIP ?? '') === undefined
        ? true
        : undefined,
    60_000,
    1000,
  );
  await checkClean();
  const measured = figures();
  for (const l of measured.pings) {
    assert.ok(l.sent > 50, `${l.name} pinged throughout: ${l.sent}`);
    assert.equal(l.sent - l.received, 0, `${l.name}: no ping lost`);
  }

  // rollback of the last node: host-local serves it again, and hands out no address held
  kubectlOk(['label', 'node', n3, 'blockipam.io/adopt-']);
  await waitFor(
    `${n3}'s conflist removed`,
    () => (existsSync(conflistOf(c, n3)) ? undefined : true),
    60_000,
    500,
  );
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(pinnedDeployment('back', n3, 3)));
  const back = await podsRunning(ns, 'back', 3, 180_000);
  const held = new Set(allocations().map(addressOf));
  for (const p of back) {
    const ip = p.status.podIP ?? '';
    assert.ok(inCidr(ip, podCidr.get(n3) ?? ''), `${p.metadata.name} in ${n3}'s podCIDR`);
    assert.ok(!held.has(ip), `${p.metadata.name}: ${ip} is no address blockipam holds`);
    assert.equal(storeFile(n3, ip), `${sandboxOf(p)}\r\neth0`, `${p.metadata.name}: host-local's file`);
  }
  const everyIP = pods(ns)
    .map((p) => p.status.podIP)
    .filter(Boolean);
  assert.deepEqual(
    everyIP.filter((ip, i) => everyIP.indexOf(ip) !== i),
    [],
    'no address held by two pods',
  );
  kubectl(['label', 'node', n1, n2, 'blockipam.io/adopt-']);
  return measured;
}

/**
 * Agent memory at idle vs the cluster's size and its pods (docs/benchmarks.md §Agent memory; not a
 * test): the node agent watches its own node's blocks, its own Node and one small IPAMNode per
 * node, so its memory must not grow with the allocations in other nodes' blocks.
 *
 * One kube-apiserver + etcd (private unless run under scripts/run-tests.ts' environment), the
 * CRDs, one pool of /26 blocks, IPAMConfig `default` with no pre-claim and no idle-block release
 * (the agent writes nothing). For each N (ascending, the cluster grows): N Nodes (InternalIP), one
 * block per node made by core's newBlock + allocateOrdinal (as core writes them, every allocation
 * the node's own), one IPAMNode per Node as the controller writes it (core's planIPAMNodes over
 * every block, pool and Node; the Node as owner); then for each P (allocations per block, every
 * block rewritten to P) one process after another, each alone:
 * - `agent`: the real agent for node 0 (block-controller/agent/main.ts under Node, as the tests
 *   start it: test/agent/agent-process.ts; no routes, no install, no IPAM socket, no node cache
 *   file), measured once its /readyz answers 200;
 * - `executable`: the same agent as the image ships it (the multi-call Bun executable through its
 *   `blockipam-agent` link);
 * - `new` / `old`: test/bench/agent-memory-watches.ts holding today's agent's watches / the
 *   previous agent's (every IPAMBlock and every Node), measured once every watch has listed.
 * After IDLE seconds of idle: VmRSS and VmHWM (peak) from /proc/PID/status, the V8 heap in use
 * (the agent's /metrics nodejs_heap_size_used_bytes; the holders report process.memoryUsage()).
 * No pod exists: the allocations' pods matter to nobody's memory here (the agent watches only
 * its own node's pods, and node 0's block is as full as every other).
 *
 *   node test/bench/agent-memory-bench.ts [--nodes 1000,5000] [--allocations 0,50]
 *     [--subjects agent,executable,new,old] [--idle-seconds 10] [--write-docs]
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { allocateOrdinal, mustParseCidr, newBlock, planIPAMNodes, rfc3339 } from 'blockipam/core';
import type { IPAMBlock, IPPool, Node } from 'blockipam/core';
import { eventually, startAgent } from '../agent/agent-process.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { ensureMultiCall } from '../helpers/multi-call.ts';
import { bounded } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';
import { renderMemory, SUBJECTS, type MemoryRow, type Subject, type Figures } from './agent-memory-report.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '1000,5000' },
    allocations: { type: 'string', default: '0,50' },
    subjects: { type: 'string', default: SUBJECTS.join(',') },
    'idle-seconds': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '32' },
    'write-docs': { type: 'boolean', default: false },
  },
});
const list = (s: string): number[] => s.split(',').map(Number);
const SIZES = list(values.nodes).sort((a, b) => a - b);
const PS = list(values.allocations);
const subjects = values.subjects.split(',') as Subject[];
for (const s of subjects) if (!SUBJECTS.includes(s)) throw new RangeError(`unknown subject ${s}`);
const IDLE_MS = Number(values['idle-seconds']) * 1000;
const CONCURRENCY = Number(values.concurrency);
const POOL = 'memory';
const NODE_LABEL = 'agent-memory';
// 10 min: the old watches' first LIST at 5,000 full blocks on a loaded machine
const READY_TIMEOUT_MS = 600_000;

const DESCRIPTION = `One kube-apiserver + etcd on loopback, the CRDs, one pool of /26 blocks, IPAMConfig \`default\` with no pre-claim and no idle-block release. Per cluster size (nodes): that many Node objects (one InternalIP each, no other status: a kubelet's Nodes are larger), one block per node made as core makes them (\`newBlock\` + \`allocateOrdinal\`: handle \`k8s-pod-network.<64-hex container ID>.eth0\`, namespace, pod, pod UID, node, time, sequence; every allocation its node's own) and one IPAMNode per Node as the cluster controller writes it (core's \`planIPAMNodes\` over every block, pool and Node, the Node as owner). Per number of allocations per block, every block is rewritten to hold that many; no pod exists (the agent watches only its own node's pods, so pods elsewhere cost it nothing; node 0's own block is as full as every other). Then, one process at a time, for node 0: \`agent (source under Node)\`: the real agent (\`block-controller/agent/main.ts\`, as the tests start it; no routes, no install, no IPAM socket, no node cache file), measured once its \`/readyz\` answers 200; \`agent (executable, Bun)\`: the same agent as the image ships it (the multi-call executable through its \`blockipam-agent\` link); \`new watches only\` / \`old watches only\`: a Node process holding only today's agent's watches (its node's blocks by label, its Node by name, every IPAMNode, pools, configs, reservations, namespaces, its pods) / the previous agent's (every IPAMBlock and every Node instead of the first three), through the agents' own informer (\`block-controller/shared\`'s \`watchKind\`: paged LIST, then WATCH, every object kept), measured once every watch has listed. Each then idles ${IDLE_MS / 1000} s; RSS (VmRSS) and its peak (VmHWM) from \`/proc/<pid>/status\`, the V8 heap in use from the agent's \`/metrics\` (\`nodejs_heap_size_used_bytes\`) or the holder's \`process.memoryUsage()\`. The chart's memory limit for the agent is 256 MiB.`;

const log = (s: string): void => console.error(`[memory] ${new Date().toISOString().slice(11, 19)} ${s}`);
const cp = controlPlane();
const ds = adminDatastore();
const pool: IPPool = { metadata: { name: POOL }, spec: { cidr: '10.64.0.0/12', blockSize: 26 } };
const nodeName = (i: number): string => `mem-${i}`;
const nodeIP = (i: number): string => `172.16.${i >> 8}.${i & 255}`;
const blockCidr = (i: number): string => `10.${64 + (i >> 10)}.${(i >> 2) & 255}.${(i & 3) * 64}/26`;
const nodes: Node[] = [];
const blocks: IPAMBlock[] = [];

/** Runs `work(i)` for i in [from, to), 32 in flight, with a progress line every 5 s. */
async function each(
  what: string,
  from: number,
  to: number,
  work: (i: number) => Promise<void>,
): Promise<void> {
  const t0 = performance.now();
  let done = 0;
  const tick = setInterval(() => log(`${what}: ${done}/${to - from}`), 5000);
  try {
    const items = Array.from({ length: to - from }, (_, k) => from + k);
    await bounded(items, async (i) => void (await work(i), done++), CONCURRENCY);
  } finally {
    clearInterval(tick);
  }
  log(`${what}: ${to - from} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** Node i's block with `p` allocations, each for a pod of node i (handle as the CNI plugin makes it). */
function blockFor(i: number, p: number, nowMs: number): IPAMBlock {
  let block = newBlock({ cidr: mustParseCidr(blockCidr(i)), pool: POOL, node: nodeName(i), nowMs });
  for (let k = 0; k < p; k++) {
    const containerID = createHash('sha256').update(`${i}/${k}`).digest('hex');
    const owner = {
      handle: `k8s-pod-network.${containerID}.eth0`,
      network: 'k8s-pod-network',
      namespace: 'default',
      pod: `app-${i}-${k}-7d4b9c8f6d-${containerID.slice(0, 5)}`,
      podUID: randomUUID(),
      node: nodeName(i),
    };
    const next = allocateOrdinal(block, 2 + k, owner, nowMs); // ordinals 0, 1 and 63 are reserved
    if (!next) throw new RangeError(`block ${blockCidr(i)}: ordinal ${2 + k} not assignable`);
    block = next.block;
  }
  return block;
}

/** Grows the cluster to `n` nodes: Nodes, their blocks (P = 0), their IPAMNodes. */
async function grow(n: number): Promise<void> {
  const from = nodes.length;
  await each('Nodes', from, n, async (i) => {
    const status = { addresses: [{ type: 'InternalIP', address: nodeIP(i) }] };
    const body = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: nodeName(i), labels: { [NODE_LABEL]: '1' } },
    };
    const node = await ds.transport.request<Node>('POST', '/api/v1/nodes', { body });
    await ds.transport.request('PATCH', `/api/v1/nodes/${nodeName(i)}/status`, {
      body: { status },
      contentType: 'application/merge-patch+json',
    });
    nodes[i] = { ...node, status } as Node;
  });
  await setAllocations(0, from);
  await each(
    'blocks',
    from,
    n,
    async (i) => void (blocks[i] = await ds.blocks.create(blockFor(i, 0, Date.now()))),
  );
  // as the controller's IPAMNode step writes them (block-controller/controller/routes/ipam-node-step.ts)
  const specs = planIPAMNodes(blocks, [pool], nodes).specs;
  await each('IPAMNodes', from, n, async (i) => {
    const name = nodeName(i);
    const uid = nodes[i]?.metadata.uid ?? '';
    const spec = specs.get(name);
    if (!spec || spec.blocks.length !== 1)
      throw new Error(`IPAMNode ${name}: planned ${JSON.stringify(spec)}`);
    await ds.ipamNodes.create({
      metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid }] },
      spec: { ...spec, updatedAt: rfc3339(Date.now()) },
    });
  });
}

/** Rewrites blocks [0, n) (every block when n is omitted) to hold `p` allocations. */
async function setAllocations(p: number, n = blocks.length): Promise<void> {
  await each(`blocks to ${p} allocations`, 0, n, async (i) => {
    const have = blocks[i] as IPAMBlock;
    if (Object.keys(have.spec.allocations).length === p) return;
    const next = blockFor(i, p, Date.now());
    blocks[i] = await ds.blocks.update({
      ...next,
      metadata: { ...next.metadata, resourceVersion: have.metadata.resourceVersion },
    });
  });
}

function procStatus(pid: number): { rssMiB: number; peakMiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

interface Running {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  heapBytes(): Promise<number>;
  stop(): Promise<void>;
}

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no free port');
  return address.port;
}

/** /readyz 200, then nodejs_heap_size_used_bytes from /metrics. */
function agentProbes(
  port: () => Promise<number>,
): Pick<Running, 'heapBytes'> & { ready: () => Promise<void> } {
  const get = async (path: string): Promise<Response | undefined> =>
    fetch(`http://127.0.0.1:${await port()}${path}`).catch(() => undefined);
  return {
    ready: async () =>
      void (await eventually(
        'agent /readyz',
        async () => ((await get('/readyz'))?.status === 200 ? true : undefined),
        READY_TIMEOUT_MS,
      )),
    heapBytes: async () => {
      const text = (await (await get('/metrics'))?.text()) ?? '';
      return Number(/^blockipam_nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
    },
  };
}

// no node cache file, no IPAM socket (agent-process.ts' default), no routes, no install
const AGENT_ARGS = ['--node-cache-file', ''];

/** Starts one subject for `node` (its readiness in `ready`). */
async function start(subject: Subject, node: string): Promise<Running> {
  if (subject === 'agent') {
    const agent = startAgent(node, AGENT_ARGS);
    const probes = agentProbes(() => agent.port());
    return {
      child: agent.child,
      ready: probes.ready(),
      heapBytes: probes.heapBytes,
      stop: () => agent.kill(),
    };
  }
  if (subject === 'executable') {
    const port = await freePort();
    const exe = join(dirname(ensureMultiCall()), 'blockipam-agent');
    const args = [
      'run',
      '--node-name',
      node,
      '--kubeconfig',
      cp.adminKubeconfig,
      '--metrics-host',
      '127.0.0.1',
    ];
    const child = spawn(exe, [...args, '--metrics-port', String(port), '--ipam-socket=', ...AGENT_ARGS], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, NODE_NAME: '' },
    });
    const probes = agentProbes(() => Promise.resolve(port));
    const stop = async (): Promise<void> => void (child.kill('SIGKILL'), await exited(child));
    return { child, ready: probes.ready(), heapBytes: probes.heapBytes, stop };
  }
  return startHolder(subject, node);
}

/** test/bench/agent-memory-watches.ts with the `new` or `old` watches. */
function startHolder(watches: 'new' | 'old', node: string): Running {
  const script = join(dirname(new URL(import.meta.url).pathname), 'agent-memory-watches.ts');
  const args = [script, '--watches', watches, '--node', node, '--kubeconfig', cp.adminKubeconfig];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const replies: ((line: Record<string, number | boolean>) => void)[] = [];
  let synced: () => void = () => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    synced = resolve;
    child.once('exit', (code) => reject(new Error(`the ${watches}-watch holder exited ${code}`)));
  });
  createInterface({ input: child.stdout }).on('line', (text) => {
    const line = JSON.parse(text) as Record<string, number | boolean>;
    if (line.synced === true) synced();
    else replies.shift()?.(line);
  });
  return {
    child,
    ready,
    heapBytes: () =>
      new Promise((resolve) => {
        replies.push((line) => resolve(Number(line.heapUsed)));
        child.stdin.write('heap\n');
      }),
    stop: async () => void (child.kill('SIGKILL'), await exited(child)),
  };
}

/** One subject alone: started, ready, IDLE_MS idle, measured, stopped. */
async function measure(subject: Subject): Promise<Figures> {
  const t0 = performance.now();
  const running = await start(subject, nodeName(0));
  try {
    await running.ready;
    const readyS = (performance.now() - t0) / 1000;
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS)); // idle: a bench, not a test
    const { rssMiB, peakMiB } = procStatus(running.child.pid ?? 0);
    const heapMiB = (await running.heapBytes()) / 2 ** 20;
    return { rssMiB, peakMiB, heapMiB, readyS };
  } finally {
    await running.stop();
  }
}

const rows: MemoryRow[] = [];
await wipeBlockipam(ds);
await ds.transport.request('DELETE', '/api/v1/nodes', { query: { labelSelector: `${NODE_LABEL}=1` } });
await ds.pools.create(pool);
// nothing for the agent to write: no pre-claim, an empty block is never idle long enough
await ds.configs.create({
  metadata: { name: 'default' },
  spec: { minFreeAddressesPerNode: 0, emptyBlockReleaseSeconds: 86_400 },
});
if (subjects.includes('executable')) ensureMultiCall();
const load0 = loadavg()[0] ?? 0;
const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
for (const n of SIZES) {
  await grow(n);
  for (const p of PS) {
    await setAllocations(p);
    const blockBytes = blocks.reduce((sum, b) => sum + JSON.stringify(b).length, 0);
    const figures: Partial<Record<Subject, Figures>> = {};
    for (const subject of subjects) {
      figures[subject] = await measure(subject);
      log(`N ${n}, P ${p}, ${subject}: ${JSON.stringify(figures[subject])}`);
    }
    rows.push({ nodes: n, allocations: p, blockMiB: blockBytes / 2 ** 20, figures, load: loadavg()[0] ?? 0 });
  }
}
await wipeBlockipam(ds);
await ds.transport.request('DELETE', '/api/v1/nodes', { query: { labelSelector: `${NODE_LABEL}=1` } });
ds.close();

const report = renderMemory(rows, subjects);
console.log(report);
if (values['write-docs'])
  await writeDocSection(
    '## Agent memory',
    `\`node test/bench/agent-memory-bench.ts --nodes ${SIZES.join(',')} --allocations ${PS.join(',')}\` (\`bash scripts/bench.sh agent-memory\` runs the defaults), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, agent of ${commit}, kube-apiserver ${cp.serverVersion}, Node ${process.version}; load average (1 min) ${load0.toFixed(2)} at the start.

${DESCRIPTION}

${report}`,
    { after: '## Burst' },
  );

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
 *   start it: test/agent/agent-process.ts; no routes, no install, no IPAM socket), measured once
 *   its /readyz answers 200;
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
import { spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { allocateOrdinal, mustParseCidr, newBlock, planIPAMNodes, rfc3339 } from 'blockipam/core';
import type { IPAMBlock, IPPool, Node } from 'blockipam/core';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';
import { ensureMultiCall } from '../helpers/multi-call.ts';
import { bounded } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';
import { measure } from './agent-memory-processes.ts';
import {
  describeMemory,
  renderMemory,
  SUBJECTS,
  type MemoryRow,
  type Subject,
  type Figures,
} from './agent-memory-report.ts';

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
// the last commit of the code the agent runs (a rebase of the bench alone does not change it)
const commit = spawnSync('git', ['log', '-1', '--format=%h', '--', 'block-controller', 'core', 'cmd'], {
  encoding: 'utf8',
}).stdout.trim();
for (const n of SIZES) {
  await grow(n);
  for (const p of PS) {
    await setAllocations(p);
    const blockBytes = blocks.reduce((sum, b) => sum + JSON.stringify(b).length, 0);
    const figures: Partial<Record<Subject, Figures>> = {};
    for (const subject of subjects) {
      figures[subject] = await measure(subject, {
        node: nodeName(0),
        kubeconfig: cp.adminKubeconfig,
        idleMs: IDLE_MS,
      });
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

${describeMemory(IDLE_MS / 1000)}

${report}`,
    { after: '## Burst' },
  );

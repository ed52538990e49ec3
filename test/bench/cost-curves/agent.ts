/**
 * Cost curve: the node agent's memory (RSS) and CPU at idle vs cluster size (issue 13 item 4;
 * issue 10: "agent RSS and CPU at idle in a cluster of 1,000 nodes / 5,000 blocks"). Each size:
 * NODES Node objects (with an InternalIP) and 5 /26 blocks per node, each holding 10 allocations,
 * seeded straight through the datastore; then one real agent process per runtime (the shipped
 * executable and/or the source under Node; its watches, no routes) for one of the nodes. Once
 * its /readyz answers 200 (every watch synced) and a settle time has passed, RSS (VmRSS, and VmHWM: the peak) is read
 * from /proc and CPU (user + system ticks) is counted over an idle window.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KubeDatastore } from 'blockipam/core/kube';
import { blockObject, poolObject, TEST_LABEL } from '../../cli/cluster.ts';
import { ensureMultiCall } from '../../helpers/multi-call.ts';
import { cpuSeconds, procStatus } from '../proc-stat.ts';
import { bounded, load1, progress } from './common.ts';
import type { CurvePoint } from './common.ts';

const BLOCKS_PER_NODE = 5;
const ALLOCATIONS_PER_BLOCK = 10;
/** After /readyz first answers 200: the watches' initial LISTs have been decoded. */
const SETTLE_MS = 15_000;
/** The idle window CPU is counted over. */
const IDLE_MS = 30_000;

const blockCidr = (b: number): string =>
  `10.${160 + Math.floor(b / 1024)}.${Math.floor((b % 1024) / 4)}.${(b % 4) * 64}/26`;

/** Grows the cluster to `nodes` nodes (and their blocks); nodes [from, nodes) are new. */
async function seed(ds: KubeDatastore, from: number, nodes: number): Promise<void> {
  await bounded(
    Array.from({ length: nodes - from }, (_, k) => from + k),
    async (n) => {
      const name = `agent-curve-${n}`;
      await ds.transport.request('POST', '/api/v1/nodes', {
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name, labels: { [TEST_LABEL]: '1' } },
        },
      });
      await ds.transport.request('PATCH', `/api/v1/nodes/${name}/status`, {
        contentType: 'application/merge-patch+json',
        body: { status: { addresses: [{ type: 'InternalIP', address: `10.99.${n >> 8}.${n & 255}` }] } },
      });
      for (let j = 0; j < BLOCKS_PER_NODE; j++) {
        const b = n * BLOCKS_PER_NODE + j;
        const allocations = Array.from({ length: ALLOCATIONS_PER_BLOCK }, (_, i) => ({
          ordinal: 2 + i,
          handle: `k8s-pod-network.a${b}x${i}.eth0`,
          node: name,
          namespace: 'default',
          pod: `p-${b}-${i}`,
          podUID: `uid-${b}-${i}`,
        }));
        await ds.blocks.create(
          blockObject({ cidr: blockCidr(b), pool: 'agent-curve', affinity: name, allocations }),
        );
      }
    },
  );
}

/**
 * How the agent runs: `executable` is what the image ships (the multi-call Bun executable
 * through its `blockipam-agent` role link, test/helpers/multi-call.ts builds it); `node` is the
 * source under the project's Node (block-controller/agent/main.ts), as the tests run it.
 */
export type AgentRuntime = 'executable' | 'node';

/** Runs one agent for node 0 until idle; @returns its RSS and idle CPU. */
async function measureAgent(
  root: string,
  kubeconfig: string,
  runtime: AgentRuntime,
): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-curve-'));
  const [command, ...prefix] =
    runtime === 'executable'
      ? [join(dirname(ensureMultiCall()), 'blockipam-agent')]
      : [join(root, 'node_modules', '.bin', 'node'), join(root, 'block-controller', 'agent', 'main.ts')];
  const child = spawn(
    command ?? '',
    [
      ...prefix,
      'run',
      '--node-name',
      'agent-curve-0',
      '--kubeconfig',
      kubeconfig,
      '--metrics-host',
      '127.0.0.1',
      '--metrics-port',
      '0',
      '--log-level',
      'info',
      '--ipam-socket=', // not the host's default path
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_NAME: '' } },
  );
  /** The metrics port, from the `agent starting` log line. */
  let port: number | undefined;
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (s: string) => {
    if (port !== undefined) return; // read on (a full pipe would block the agent), keep nothing
    out += s;
    const m = /"message":"agent starting".*?"port":(\d+)/.exec(out);
    if (m) port ??= Number(m[1]);
  });
  const ready = async (): Promise<boolean> => {
    if (port === undefined) return false;
    try {
      return (await fetch(`http://127.0.0.1:${Number(port)}/readyz`)).status === 200;
    } catch {
      return false;
    }
  };
  const pid = child.pid ?? 0;
  try {
    const t0 = performance.now();
    while (!(await ready())) {
      if (child.exitCode !== null) throw new Error(`the agent exited ${child.exitCode}`);
      if (performance.now() - t0 > 300_000) throw new Error('the agent was not ready in 300 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const readyS = (performance.now() - t0) / 1000;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const cpu0 = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const idleCpu = (cpuSeconds(pid) - cpu0) / (IDLE_MS / 1000);
    const { rssMiB, peakMiB } = procStatus(pid);
    return {
      'RSS MiB (idle)': Math.round(rssMiB),
      'peak RSS MiB': Math.round(peakMiB),
      'idle CPU (% of a core)': Math.round(idleCpu * 1000) / 10,
      'ready s': Math.round(readyS * 10) / 10,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) =>
      child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The curve at `sizes` (node counts, ascending), per runtime (measured one after the other at each size). */
export async function agentCurve(
  ds: KubeDatastore,
  options: { root: string; kubeconfig: string; sizes: readonly number[]; runtimes: readonly AgentRuntime[] },
): Promise<Map<AgentRuntime, CurvePoint[]>> {
  await ds.pools.create(poolObject('agent-curve', '10.160.0.0/12'));
  const points = new Map<AgentRuntime, CurvePoint[]>(options.runtimes.map((r) => [r, []]));
  let seeded = 0;
  for (const nodes of options.sizes) {
    const t0 = performance.now();
    await seed(ds, seeded, nodes);
    seeded = nodes;
    progress(`agent curve: ${nodes} nodes seeded (${Math.round(performance.now() - t0)} ms)`);
    for (const runtime of options.runtimes) {
      const loadStart = load1();
      const figures = await measureAgent(options.root, options.kubeconfig, runtime);
      const point = {
        x: nodes,
        figures: { blocks: nodes * BLOCKS_PER_NODE, ...figures },
        loadStart,
        loadEnd: load1(),
      };
      points.get(runtime)?.push(point);
      progress(`agent curve (${runtime}): ${nodes} nodes: ${JSON.stringify(point.figures)}`);
    }
  }
  return points;
}

/** The series names of the runtimes, as the table and chart show them. */
export const RUNTIME_SERIES: Readonly<Record<AgentRuntime, string>> = {
  executable: 'agent executable (as the image ships it, Bun)',
  node: 'agent source under Node 24 (as the tests run it)',
};

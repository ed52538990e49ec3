/**
 * The processes test/bench/agent-memory-bench.ts measures, one at a time: the agent (source under
 * Node, through test/agent/agent-process.ts), the image's executable, and the watch holders of
 * test/bench/agent-memory-watches.ts; how each is known ready, and its RSS, peak RSS and V8 heap.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { procStatus } from './proc-stat.ts';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { eventually, startAgent } from '../agent/agent-process.ts';
import { ensureMultiCall } from '../helpers/multi-call.ts';
import type { Figures, Subject } from './agent-memory-report.ts';

// 10 min: the old watches' first LIST at 5,000 full blocks on a loaded machine
const READY_TIMEOUT_MS = 600_000;

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

/** Starts one subject for `node` (its readiness in `ready`). */
async function start(subject: Subject, node: string, kubeconfig: string): Promise<Running> {
  if (subject === 'agent') {
    const agent = startAgent(node); // no IPAM socket (its default), no routes, no install
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
    const args = ['run', '--node-name', node, '--kubeconfig', kubeconfig, '--metrics-host', '127.0.0.1'];
    const child = spawn(exe, [...args, '--metrics-port', String(port), '--ipam-socket='], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, NODE_NAME: '' },
    });
    const probes = agentProbes(() => Promise.resolve(port));
    const stop = async (): Promise<void> => void (child.kill('SIGKILL'), await exited(child));
    return { child, ready: probes.ready(), heapBytes: probes.heapBytes, stop };
  }
  return startHolder(subject, node, kubeconfig);
}

/** test/bench/agent-memory-watches.ts with the `new` or `old` watches. */
function startHolder(watches: 'new' | 'old', node: string, kubeconfig: string): Running {
  const script = join(dirname(new URL(import.meta.url).pathname), 'agent-memory-watches.ts');
  const args = [script, '--watches', watches, '--node', node, '--kubeconfig', kubeconfig];
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

/**
 * One subject alone for `options.node`: started, ready, `options.idleMs` idle, measured, stopped.
 * @throws Error when it is not ready within 10 min or exits before
 */
export async function measure(
  subject: Subject,
  options: { node: string; kubeconfig: string; idleMs: number },
): Promise<Figures> {
  const t0 = performance.now();
  const running = await start(subject, options.node, options.kubeconfig);
  try {
    await running.ready;
    const readyS = (performance.now() - t0) / 1000;
    await new Promise((resolve) => setTimeout(resolve, options.idleMs)); // idle: a bench, not a test
    const { rssMiB, peakMiB } = procStatus(running.child.pid ?? 0);
    const heapMiB = (await running.heapBytes()) / 2 ** 20;
    return { rssMiB, peakMiB, heapMiB, readyS };
  } finally {
    await running.stop();
  }
}

/**
 * Pieces of test/bench/churn-bench.ts (not a test): the simulated nodes (network namespaces, each
 * with a churn-node.ts process and a churn-relay.ts), the host side of their API route, process
 * priorities, and the per-call breakdowns read from the IPAMs' own logs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { NodeCall, NodeResult } from './churn-node.ts';

const NODE_MAIN = fileURLToPath(new URL('./churn-node.ts', import.meta.url));
const RELAY_MAIN = fileURLToPath(new URL('./churn-relay.ts', import.meta.url));
/** A churn-relay.ts process (a leg of the nodes' route to the API server). */
export interface Relay {
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts churn-relay.ts with `args` (under `prefix`, e.g. `ip netns exec NS`) and waits for
 * its "ready".
 */
async function startRelay(prefix: readonly string[], args: readonly string[]): Promise<Relay> {
  const [cmd = process.execPath, ...rest] = [...prefix, process.execPath, RELAY_MAIN, ...args];
  const child = spawn(cmd, rest, { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => line === 'ready' && resolve());
    child.once('exit', (code) => reject(new Error(`churn-relay.ts ${args.join(' ')} exited (${code})`)));
  });
  return {
    pid: child.pid ?? 0,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      await new Promise((resolve) => {
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => resolve(clearTimeout(t)));
      });
    },
  };
}

/** Host side of the nodes' API route: a relay process from the Unix socket `path` to host:port. */
export function serveApiSocket(path: string, host: string, port: number): Promise<Relay> {
  return startRelay([], ['unix-to-tcp', path, host, String(port)]);
}

/**
 * Sets every thread of process `pid` to nice `nice` (threads it starts later inherit it);
 * threads that end meanwhile, or a process gone, are skipped.
 */
export function reniceProcess(pid: number, nice: number): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const tid of tids) {
    try {
      setPriority(Number(tid), nice);
    } catch {
      // the thread ended
    }
  }
}

/** A simulated node: its network namespace and the churn-node.ts process running in it. */
export interface SimNode {
  readonly name: string;
  readonly netns: string;
  /**
   * A second namespace standing for the node's pods: CNI_NETNS (calico-ipam and whereabouts
   * refuse a CNI_NETNS equal to their own namespace; no IPAM here opens it).
   */
  readonly podNetns: string;
  /** Runs the calls at once in the node; resolves with every result (in completion order). */
  run(calls: readonly NodeCall[]): Promise<NodeResult[]>;
  /** CPU seconds of every IPAM process of this node that has exited so far. */
  cpu(): Promise<number>;
  /** The node's leg of the route to the API server (churn-relay.ts in its namespace). */
  readonly relay: Relay;
  stop(): Promise<void>;
}

/** Deletes namespaces `<tag><pid>-*` whose pid is no longer alive (left by a killed run). */
function sweep(tag: string): void {
  if (!existsSync('/var/run/netns')) return;
  for (const name of readdirSync('/var/run/netns')) {
    const m = new RegExp(`^${tag}(\\d+)-`).exec(name);
    if (m && !existsSync(`/proc/${m[1]}`)) spawnSync('ip', ['netns', 'del', name]);
  }
}

/**
 * Creates network namespace `bipamch<pid>-<name>` (loopback up) and starts churn-node.ts in it,
 * and beside it a churn-relay.ts from 127.0.0.1:`apiPort` inside to the host socket `apiSocket`.
 */
export async function startNode(name: string, apiPort: number, apiSocket: string): Promise<SimNode> {
  sweep('bipamch');
  const netns = `bipamch${process.pid}-${name}`;
  const podNetns = `${netns}-pods`;
  for (const args of [
    ['netns', 'add', netns],
    ['-n', netns, 'link', 'set', 'lo', 'up'],
    ['netns', 'add', podNetns],
  ]) {
    const r = spawnSync('ip', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
  }
  const relay = await startRelay(['ip', 'netns', 'exec', netns], ['tcp-to-unix', String(apiPort), apiSocket]);
  const child: ChildProcess = spawn('ip', ['netns', 'exec', netns, process.execPath, NODE_MAIN], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<string, (r: NodeResult) => void>();
  let ready: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === 'ready') return ready();
    const r = JSON.parse(line) as NodeResult & { cpuS?: number };
    waiting.get(r.id)?.(r);
    waiting.delete(r.id);
  });
  await Promise.race([
    started,
    new Promise((_, reject) => child.once('exit', () => reject(new Error(`node ${name} exited at start`)))),
  ]);
  return {
    name,
    netns,
    podNetns,
    relay,
    run: (calls) =>
      Promise.all(
        calls.map(
          (c) =>
            new Promise<NodeResult>((resolve) => {
              waiting.set(c.id, resolve);
              child.stdin!.write(`${JSON.stringify(c)}\n`);
            }),
        ),
      ),
    cpu: () =>
      new Promise<number>((resolve) => {
        waiting.set('cpu', (r) => resolve((r as NodeResult & { cpuS: number }).cpuS));
        child.stdin!.write(`${JSON.stringify({ id: 'cpu' })}\n`);
      }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end();
        await new Promise((resolve) => {
          const t = setTimeout(() => child.kill('SIGKILL'), 5000);
          child.once('exit', () => resolve(clearTimeout(t)));
        });
      }
      await relay.stop();
      spawnSync('ip', ['netns', 'del', netns]);
      spawnSync('ip', ['netns', 'del', podNetns]);
    },
  };
}

/** Per-call figures of blockipam from its log's `done` lines (logLevel info): lock wait, requests, path. */
export interface BlockipamCall {
  readonly containerID: string;
  readonly cmd: string;
  /** Waiting for the node's host lock, ms. */
  readonly lockWaitMs?: number;
  /** Lock obtained → released, ms (the done line's lockHeldMs). */
  readonly heldMs?: number;
  /** Process start to the end of the command, ms (startMs: start to dispatch: runtime start-up). */
  readonly totalMs?: number;
  readonly startMs?: number;
  /**
   * CPU (user + system) of the process, ms: before dispatch (runtime start-up), while waiting
   * for the lock, while holding it, and in all (the done line's cpuStartMs, cpuLockWaitMs,
   * cpuLockHeldMs, cpuMs).
   */
  readonly cpu?: {
    readonly start: number;
    readonly wait?: number;
    readonly held?: number;
    readonly total: number;
  };
  readonly apiRequests?: number;
  /** Which client served the call: `agent` (forwarded over the agent's socket) or `direct`. */
  readonly path?: string;
}

/** Reads blockipam log files; one entry per containerID + cmd seen with a `done` line. */
export function readBlockipamLogs(files: readonly string[]): BlockipamCall[] {
  const out = new Map<string, BlockipamCall>();
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const text of readFileSync(file, 'utf8').split('\n')) {
      if (!text.startsWith('{')) continue;
      const l = JSON.parse(text) as Record<string, unknown>;
      const key = `${String(l.containerID)} ${String(l.cmd)}`;
      const prev = out.get(key) ?? { containerID: String(l.containerID), cmd: String(l.cmd) };
      if (l.msg === 'done')
        out.set(key, {
          ...prev,
          ...(typeof l.lockWaitMs === 'number' ? { lockWaitMs: l.lockWaitMs } : {}),
          ...(typeof l.lockHeldMs === 'number' ? { heldMs: l.lockHeldMs } : {}),
          totalMs: Number(l.totalMs),
          startMs: Number(l.startMs),
          ...(typeof l.cpuMs === 'number'
            ? {
                cpu: {
                  start: Number(l.cpuStartMs),
                  total: l.cpuMs,
                  ...(typeof l.cpuLockWaitMs === 'number' ? { wait: l.cpuLockWaitMs } : {}),
                  ...(typeof l.cpuLockHeldMs === 'number' ? { held: l.cpuLockHeldMs } : {}),
                },
              }
            : {}),
          ...(typeof l.apiRequests === 'number' ? { apiRequests: l.apiRequests } : {}),
          ...(typeof l.path === 'string' ? { path: l.path } : {}),
        });
    }
  }
  return [...out.values()];
}

/** Per-process lock wait of calico-ipam, ms, from its log ("About to acquire" → "Acquired host-wide IPAM lock"). */
export function readCalicoLockWaits(
  files: readonly string[],
): { pid: string; waitMs: number; atMs: number }[] {
  const out: { pid: string; waitMs: number; atMs: number }[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const asking = new Map<string, number>();
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \[\w+\]\[(\d+)\]/.exec(line);
      if (!m) continue;
      const at = Date.parse(`${m[1]?.replace(' ', 'T')}Z`);
      if (line.includes('About to acquire host-wide IPAM lock')) asking.set(m[2] ?? '', at);
      else if (line.includes('Acquired host-wide IPAM lock')) {
        const t = asking.get(m[2] ?? '');
        if (t !== undefined) out.push({ pid: m[2] ?? '', waitMs: at - t, atMs: at });
      }
    }
  }
  return out;
}

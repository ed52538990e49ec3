/**
 * One simulated node of test/bench/churn-bench.ts (not a test), run inside the node's network
 * namespace (`ip netns exec NS node churn-node.ts`); its route to the API server is a
 * churn-relay.ts process of its own beside it. It is the node's runtime: each stdin line is a JSON call {id, bin, env, stdin}; it spawns `bin`
 *    (so the IPAM runs in this namespace; blockipam's host lock is a file in the node's own
 *    cacheDir, i.e. per node) and writes one JSON line {id, ms, status, stdout, stderr} when it
 *    exits; ms is spawn-to-exit wall clock, stderr its last 400 characters. A spawn is held back
 *    while the machine's MemAvailable is under MEMORY_FLOOR_BYTES (the machine is shared; a
 *    thousand IPAM processes at once must not exhaust it); `delayedMs` says how long;
 *  - a line {"id": "cpu"} answers {id: "cpu", cpuS}: the CPU seconds (user + system) of every
 *    IPAM process that has exited so far (this process's cutime + cstime).
 * Prints "ready" once it reads calls.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** Kept of a failed call's stderr, to say why in the report. */
const STDERR_TAIL = 400;
/** 3 GiB: room for the other engineers' jobs on the shared machine (24 GiB). */
const MEMORY_FLOOR_BYTES = 3 * 2 ** 30;
/** /proc/<pid>/stat times are in clock ticks (USER_HZ = 100). */
const TICKS_PER_S = 100;

export interface NodeCall {
  readonly id: string;
  readonly bin: string;
  readonly env: Record<string, string>;
  readonly stdin: string;
}

export interface NodeResult {
  readonly id: string;
  readonly ms: number;
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** How long the spawn was held back for memory, ms (0 = spawned at once). */
  readonly delayedMs: number;
  /** When the process exited, ms since epoch. */
  readonly endedAtMs: number;
}

function memAvailable(): number {
  const m = /MemAvailable:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Infinity;
}

/** cutime + cstime of this process: CPU of its exited (waited-for) children, s. */
function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / TICKS_PER_S;
}

async function run(call: NodeCall): Promise<void> {
  const asked = Date.now();
  while (memAvailable() < MEMORY_FLOOR_BYTES) await new Promise((resolve) => setTimeout(resolve, 100));
  const delayedMs = Date.now() - asked;
  const t0 = process.hrtime.bigint();
  const child = spawn(call.bin, [], { env: call.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-STDERR_TAIL)));
  const done = (status: number | null, error?: Error): void => {
    const result: NodeResult = {
      id: call.id,
      ms: Number(process.hrtime.bigint() - t0) / 1e6,
      status,
      stdout,
      stderr: error ? String(error) : stderr,
      delayedMs,
      endedAtMs: Date.now(),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  };
  child.on('error', (e) => done(-1, e));
  child.on('close', (status) => done(status));
  child.stdin.on('error', () => undefined);
  child.stdin.end(call.stdin);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const call = JSON.parse(line) as NodeCall;
  if (call.id === 'cpu')
    process.stdout.write(`${JSON.stringify({ id: 'cpu', cpuS: childrenCpuSeconds() })}\n`);
  else void run(call);
});
process.stdin.on('end', () => process.exit(0));
process.stdout.write('ready\n');

/**
 * Helpers of test/bench/burst-bench.ts: a launcher that starts N processes at once and gives
 * each one's exit code, stdout and CPU (user + system from wait4(2): the whole process, runtime
 * start-up and exit included — Node's child_process does not expose a child's rusage), and the
 * API-request arithmetic of one burst.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One process of a burst, as the launcher reports it. */
export interface LaunchedRun {
  /** exit code (a signal's death: -signal) */
  readonly code: number;
  /** user + system CPU of the process, ms (wait4 rusage) */
  readonly cpuMs: number;
  /** ms from the first fork to this process's exit */
  readonly exitMs: number;
  readonly stdout: string;
}

export interface LaunchedBurst {
  /** ms from the first fork to the last exit */
  readonly wallMs: number;
  /** in the order of `envs` */
  readonly runs: readonly LaunchedRun[];
}

/**
 * Forks every process before waiting for any, stdin from one file, stdout to a file each,
 * stderr to /dev/null; reaps them with wait4 as they exit.
 */
const launcher = `
import json, os, sys, time
spec = json.load(open(sys.argv[1]))
d = sys.argv[2]
stdin_path = os.path.join(d, 'stdin')
with open(stdin_path, 'w') as f:
    f.write(spec['stdin'])
n = len(spec['envs'])
pids = {}
t0 = time.monotonic()
for i, env in enumerate(spec['envs']):
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(os.open(stdin_path, os.O_RDONLY), 0)
            os.dup2(os.open(os.path.join(d, 'out-%d' % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
            os.dup2(os.open('/dev/null', os.O_WRONLY), 2)
            os.execve(spec['exe'], [spec['exe']], env)
        finally:
            os._exit(127)
    pids[pid] = i
runs = [None] * n
last = 0.0
while pids:
    pid, status, ru = os.wait4(-1, 0)
    t = (time.monotonic() - t0) * 1000
    i = pids.pop(pid, None)
    if i is None:
        continue
    last = max(last, t)
    with open(os.path.join(d, 'out-%d' % i)) as f:
        out = f.read()
    runs[i] = {'code': os.waitstatus_to_exitcode(status), 'cpuMs': (ru.ru_utime + ru.ru_stime) * 1000, 'exitMs': t, 'stdout': out}
print(json.dumps({'wallMs': last, 'runs': runs}))
`;

/**
 * Runs `exe` once per entry of `envs`, all at once, each with exactly that environment and
 * `stdin`; `dir` is a scratch directory (the launcher's stdin and stdout files).
 * @throws Error when the launcher itself fails
 */
export async function launchBurst(
  exe: string,
  envs: readonly Record<string, string>[],
  stdin: string,
  dir: string,
): Promise<LaunchedBurst> {
  const spec = join(dir, 'burst.json');
  writeFileSync(spec, JSON.stringify({ exe, envs, stdin }));
  const child = spawn('python3', ['-c', launcher, spec, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`burst launcher exited ${code}`);
  return JSON.parse(out) as LaunchedBurst;
}

/** apiserver_request_total keys (`group/resource VERB code`) that are block UPDATEs. */
export const BLOCK_UPDATE = /^ipam\.blockipam\.io\/ipamblocks PUT /;

/**
 * Requests a CNI call can cause, besides block UPDATEs: blockipam's kinds and the core kinds
 * the plugin or agent read (pods, namespaces, nodes). Leaves out WATCHes (counted when they
 * end, not per event), kube-apiserver's own traffic (leases, endpoints) and /metrics.
 */
export const IPAM_REQUEST = /^(ipam\.blockipam\.io\/[a-z]+|\/(pods|namespaces|nodes)) (?!WATCH)/;

/** Sum of the values whose key matches `re`. */
export function sumOf(m: ReadonlyMap<string, number>, re: RegExp): number {
  let n = 0;
  for (const [k, v] of m) if (re.test(k)) n += v;
  return n;
}

/** The CNI error code of a failed call's stdout (CNI spec §Error), or the exit code. */
export function cniCode(run: LaunchedRun): string {
  try {
    const doc = JSON.parse(run.stdout) as { code?: number; msg?: string };
    if (typeof doc.code === 'number') return `CNI ${doc.code}${doc.msg ? ` (${doc.msg})` : ''}`;
  } catch {
    // not JSON: the exit code is all there is
  }
  return `exit ${run.code}`;
}

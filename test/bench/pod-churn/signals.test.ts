/**
 * The pod-churn benchmark's node agents stop with it: a process that started them with
 * `startAgents` (network.ts) and is sent SIGTERM exits 143 and takes its agents along — before,
 * Node's default SIGTERM ended the benchmark at once and left every agent (a host process)
 * running. No cluster and no benchmark run: the real agents are started against a kubeconfig whose
 * server is a closed loopback port (they keep retrying, as against a cluster being torn down),
 * and `startAgents` returns once they are spawned.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..');
/** Bounded wait for the agents to go (their SIGTERM shutdown takes at most 20 s). */
const GONE_MS = 60_000;

/** True while `pid` is a live (not zombie) process. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

void it('SIGTERM to a process running startAgents: it exits 143 and its agents are gone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-churn-signals-'));
  const nodes = ['node-1', 'node-2'];
  let pids: number[] = [];
  try {
    writeFileSync(
      join(dir, 'kubeconfig'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: 'https://127.0.0.1:9', 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'u', user: { token: 'x' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    for (const n of nodes) mkdirSync(join(dir, n));
    const cluster = { runDir: dir, nodes, kubeconfig: join(dir, 'kubeconfig') };
    const script = `
      import { startAgents } from ${JSON.stringify(join(here, 'network.ts'))};
      const agents = await startAgents(${JSON.stringify(cluster)}, ${JSON.stringify(repoRoot)});
      console.log(JSON.stringify(agents.pids));
      setInterval(() => {}, 1000);`;
    const bench = spawn(process.execPath, ['--input-type=module', '--eval', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [line] = (await once(createInterface({ input: bench.stdout }), 'line')) as [string];
    pids = JSON.parse(line) as number[];
    assert.equal(pids.length, 2);
    assert.ok(pids.every(alive), 'both agents running before the signal');
    const exit = once(bench, 'exit') as Promise<[number | null, string | null]>;
    bench.kill('SIGTERM');
    const [code, signal] = await exit;
    assert.deepEqual({ code, signal }, { code: 143, signal: null }, 'exits 143: the exit handlers ran');
    const end = Date.now() + GONE_MS;
    while (pids.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(pids.filter(alive), [], 'no agent left running');
  } finally {
    for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

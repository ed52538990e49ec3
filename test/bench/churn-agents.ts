/**
 * blockipam's node agents in test/bench/churn-bench.ts (not a test): one real agent process per
 * simulated node (`node block-controller/agent/main.ts`, the entry test/agent/agent-process.ts
 * and the burst bench start), inside the node's network namespace so that its API traffic takes
 * the node's relay as the node's IPAM processes' does. With a socket it is the node's IPAM server
 * (`--ipam-socket`, a directory of its own that the agent makes root-only); without one it only
 * pre-claims (the plugin then takes its direct path). Readiness is waited for on the agent's own
 * signals — its "IPAM server listening" log line, then /readyz 200 (every watch listed; before
 * that its socket answers "try again later") — and it is stopped by PID.
 */
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { AGENT_MAIN } from '../agent/agent-process.ts';

const run = promisify(execFile);
/** 20 s: the agent drains requests in flight for at most 15 s, and its lifecycle exits within 20 s. */
const STOP_GRACE_MS = 20_000;
/** 100 ms between /readyz probes: a curl process each, inside the node's namespace. */
const PROBE_INTERVAL_MS = 100;
/** Kept of the agent's stderr, to say why it failed. */
const STDERR_TAIL = 2000;

export interface ChurnAgentOptions {
  /** The Node it serves (`--node-name`). */
  readonly node: string;
  /** The simulated node's network namespace (`ip netns exec`). */
  readonly netns: string;
  /** Its kubeconfig (the API server as seen from inside the namespace: the node's relay). */
  readonly kubeconfig: string;
  /** Absolute path (≤ 107 bytes) of its IPAM socket; absent: it serves no socket. */
  readonly socket?: string;
}

/** The real node agent of one simulated node. */
export interface ChurnAgent {
  readonly node: string;
  readonly pid: number;
  /** Its IPAM socket; undefined when it serves none. */
  readonly socket: string | undefined;
  /**
   * Resolves once the agent is ready: its IPAM server listening (when it has a socket) and its
   * /readyz answering 200.
   * @throws Error when it exits first or is not ready within `timeoutMs` (default 300 000 ms: a
   *   loaded 2-core machine starting one Node process per node)
   */
  ready(timeoutMs?: number): Promise<void>;
  /** SIGTERM to its PID (SIGKILL after 20 s); resolves once it has exited. No-op once exited. */
  stop(): Promise<void>;
}

/** Starts the agent of one simulated node (log level info: its start-up lines are the events). */
export function startChurnAgent(o: ChurnAgentOptions): ChurnAgent {
  // `ip netns exec` execs the command: the child's PID is the agent's.
  const child = spawn(
    'ip',
    [
      ...['netns', 'exec', o.netns, process.execPath, AGENT_MAIN],
      ...['--node-name', o.node, '--kubeconfig', o.kubeconfig, '--log-level', 'info'],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', '0'],
      `--ipam-socket=${o.socket ?? ''}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NAME: '' } },
  );
  const pid = child.pid ?? 0;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-STDERR_TAIL)));
  const exit = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(String(code ?? signal))),
  );
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const seen: Record<string, unknown>[] = [];
  const waiters: { message: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    seen.push(line);
    for (const w of waiters.filter((x) => x.message === line.message)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(line);
    }
  });
  const line = (message: string): Promise<Record<string, unknown>> => {
    const earlier = seen.find((l) => l.message === message);
    return earlier ? Promise.resolve(earlier) : new Promise((resolve) => waiters.push({ message, resolve }));
  };
  const fail = (why: string): Error => new Error(`agent ${o.node}: ${why}; stderr: ${stderr}`);

  const becomeReady = async (deadline: number): Promise<void> => {
    const port = Number((await line('agent starting')).port);
    if (o.socket !== undefined) await line('IPAM server listening');
    const url = `http://127.0.0.1:${port}/readyz`;
    for (;;) {
      const status = await run(
        'ip',
        ['netns', 'exec', o.netns, 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', url],
        {
          encoding: 'utf8',
        },
      ).then(
        (r) => r.stdout.trim(),
        () => '',
      );
      if (status === '200') return;
      if (exited()) throw fail('exited before /readyz answered 200');
      if (Date.now() > deadline) throw fail(`/readyz not 200 (last: ${status || 'no answer'})`);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
  };

  return {
    node: o.node,
    pid,
    socket: o.socket,
    async ready(timeoutMs = 300_000) {
      const deadline = Date.now() + timeoutMs;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          becomeReady(deadline),
          exit.then((how) => Promise.reject(fail(`exited (${how}) before it was ready`))),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(fail(`not ready in ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
    async stop() {
      if (exited() || pid === 0) return;
      const signal = (name: NodeJS.Signals): void => {
        try {
          process.kill(pid, name);
        } catch {
          // gone meanwhile: its exit event is on the way
        }
      };
      signal('SIGTERM');
      const timer = setTimeout(() => exited() || signal('SIGKILL'), STOP_GRACE_MS);
      await exit;
      clearTimeout(timer);
    },
  };
}

/**
 * Runs the real node agent (`node block-controller/agent/main.ts`) as a child process against
 * the run's API server, and reads its JSON log lines.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const AGENT_MAIN = join(root, 'block-controller', 'agent', 'main.ts');

export type LogLine = Record<string, unknown> & { message: string; level: string };

export interface AgentProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  /** The /metrics port (from the "agent starting" line). */
  port(): Promise<number>;
  /** Resolves with the first line (already seen or coming) that matches. */
  waitFor(match: (line: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the exit code (or signal name). */
  exited(): Promise<number | string>;
  /** SIGKILL unless exited; resolves once gone. */
  kill(): Promise<void>;
}

/**
 * Starts the agent for `node` with the admin kubeconfig (unless `args` names another
 * `--kubeconfig`) and no IPAM socket (unless `args` names `--ipam-socket`); `args` and `env` are
 * added.
 */
export function startAgent(
  node: string,
  args: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): AgentProcess {
  const child = spawn(
    process.execPath,
    [
      AGENT_MAIN,
      '--node-name',
      node,
      ...(args.includes('--kubeconfig') ? [] : ['--kubeconfig', controlPlane().adminKubeconfig]),
      '--metrics-host',
      '127.0.0.1',
      '--metrics-port',
      '0',
      // no IPAM socket unless asked for: the default path is the host's, and agents of one test
      // run side by side on this host
      ...(args.some((a) => a.startsWith('--ipam-socket')) ? [] : ['--ipam-socket=']),
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NAME: '', ...env } },
  );
  const lines: LogLine[] = [];
  const waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      return;
    }
    lines.push(line);
    for (const w of [...waiters])
      if (w.match(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
  });
  const exit = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const waitFor = (match: (l: LogLine) => boolean, what: string, timeoutMs = 30_000): Promise<LogLine> => {
    const seen = lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`agent: no log line "${what}" in ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`),
          ),
        timeoutMs,
      );
      waiters.push({
        match,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      void exit.then(() =>
        setTimeout(
          () => reject(new Error(`agent exited before "${what}"; stderr: ${stderr.slice(-2000)}`)),
          100,
        ),
      );
    });
  };
  return {
    child,
    lines,
    port: async () => Number((await waitFor((l) => l.message === 'agent starting', 'agent starting')).port),
    waitFor,
    exited: () => exit,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
  };
}

/** GETs a path of the agent's HTTP server. */
export async function scrape(
  agent: AgentProcess,
  path = '/metrics',
): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${await agent.port()}${path}`);
  return { status: res.status, text: await res.text() };
}

/** Polls `check` every 50 ms until it returns a value other than undefined. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Creates (or replaces) a Node object with these labels and an InternalIP. */
export function applyNode(name: string, labels: Record<string, string> = {}, ip = '10.99.0.10'): void {
  const r = kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
      status: { addresses: [{ type: 'InternalIP', address: ip }] },
    }),
  });
  if (r.status !== 0) throw new Error(`kubectl apply node ${name}: ${r.stderr}`);
}

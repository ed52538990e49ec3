/**
 * The real node agent (`node block-controller/agent/main.ts`) inside a "node" namespace of a
 * {@link World}, on the world's API server (through the node's forwarder), with its JSON log
 * lines collected and its HTTP endpoints probed from inside the namespace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { AGENT_MAIN } from '../../agent/agent-process.ts';
import { controlPlane } from '../../helpers/control-plane.ts';
import { inNs } from './netns.ts';
import type { World } from './world.ts';

export interface NodeAgent {
  readonly child: ChildProcess;
  /** Every JSON log line, in order. */
  readonly log: Record<string, unknown>[];
  /** GET `path` of its HTTP server from inside the node: [HTTP status (0: no answer), body]. */
  probe(path: string): [number, string];
  /** True while the process runs. */
  running(): boolean;
  /** Sends `signal` unless it exited; resolves once it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the agent for node `i` of `w` as the admin, `args` added (e.g. `--routes`).
 */
export function startNodeAgent(w: World, i: number, args: readonly string[] = []): NodeAgent {
  const ns = w.topo.nodes[i] as string;
  const child = spawn(
    'ip',
    [
      ...['netns', 'exec', ns, process.execPath, AGENT_MAIN],
      ...['--node-name', w.nodeName(i), '--kubeconfig', controlPlane().adminKubeconfig],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', '0'],
      // no IPAM socket unless asked for: the node namespaces share this host's file system
      ...(args.some((a) => a.startsWith('--ipam-socket')) ? [] : ['--ipam-socket=']),
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const log: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout }).on('line', (text) => {
    try {
      log.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  return {
    child,
    log,
    running,
    probe(path) {
      const port = Number(log.find((l) => l.message === 'agent starting')?.port);
      if (!port) return [0, 'not started'];
      const r = inNs(ns, 'curl', ['-s', '-w', '\\n%{http_code}', `http://127.0.0.1:${String(port)}${path}`]);
      const lines = r.stdout.split('\n');
      return [Number(lines.at(-1)), lines.slice(0, -1).join('\n')];
    },
    async stop(signal = 'SIGTERM') {
      if (!running()) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

/**
 * Makes the test API server (127.0.0.1:PORT in the host namespace) reachable from inside a
 * node namespace at the same 127.0.0.1:PORT, so the plugin's kubeconfig works unchanged and
 * all traffic stays on loopback: the test process serves a Unix socket that pipes to the API
 * server; a small process inside the node namespace (this file run as a script) listens on
 * its own loopback and pipes to that Unix socket. Stopping the in-namespace process makes the
 * API server unreachable from that node only (the code-11 tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

function pipe(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
}

/** Host side: Unix socket `sockPath` → TCP host:port. */
export async function serveUnix(sockPath: string, host: string, port: number): Promise<Server> {
  rmSync(sockPath, { force: true });
  const server = createServer((s) => pipe(s, connect({ host, port })));
  server.listen(sockPath);
  await once(server, 'listening');
  return server;
}

export interface NodeForwarder {
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the in-namespace listener (127.0.0.1:port inside `ns`) piping to `sockPath`. */
export async function startNodeForwarder(ns: string, port: number, sockPath: string): Promise<NodeForwarder> {
  const child = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, fileURLToPath(import.meta.url), String(port), sockPath],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  if (!chunk.toString().startsWith('listening')) throw new Error(`forwarder in ${ns} did not start`);
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [port, sockPath] = process.argv.slice(2);
  const server = createServer((s) => pipe(s, connect({ path: sockPath as string })));
  server.listen({ host: '127.0.0.1', port: Number(port) }, () => process.stdout.write('listening\n'));
}

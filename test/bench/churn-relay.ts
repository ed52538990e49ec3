/**
 * The simulated nodes' route to the API server in test/bench/churn-bench.ts (not a test), as a
 * process of its own so the bench can give it the control plane's priority (on a cluster this
 * is the network — the kernel and a NIC — not a process competing with a thousand IPAM
 * processes for the CPU):
 *   node churn-relay.ts tcp-to-unix PORT SOCKET   inside a node's namespace: listens on
 *     127.0.0.1:PORT there and pipes each connection to the Unix socket SOCKET;
 *   node churn-relay.ts unix-to-tcp SOCKET HOST PORT   on the host: listens on SOCKET and pipes
 *     each connection to HOST:PORT (the API server).
 * TCP_NODELAY on the TCP side (delayed ACKs would stall small TLS writes by ~40 ms). Prints
 * "ready" once listening.
 */
import { rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';

const pipe = (a: Socket, b: Socket): void => {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
};

const [mode, ...args] = process.argv.slice(2);
if (mode === 'tcp-to-unix' && args.length === 2) {
  const [port, socketPath] = args as [string, string];
  const server = createServer({ noDelay: true }, (s) => pipe(s, connect({ path: socketPath })));
  await new Promise<void>((resolve) =>
    server.listen({ host: '127.0.0.1', port: Number(port), backlog: 4096 }, resolve),
  );
} else if (mode === 'unix-to-tcp' && args.length === 3) {
  const [socketPath, host, port] = args as [string, string, string];
  rmSync(socketPath, { force: true });
  const server = createServer((s) => pipe(s, connect({ host, port: Number(port), noDelay: true })));
  await new Promise<void>((resolve) => server.listen({ path: socketPath, backlog: 4096 }, resolve));
} else {
  throw new Error('usage: churn-relay.ts tcp-to-unix PORT SOCKET | unix-to-tcp SOCKET HOST PORT');
}
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.stdout.write('ready\n');

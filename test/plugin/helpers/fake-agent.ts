/**
 * A stand-in for the node agent's IPAM socket (the real server is block-controller's): a Unix
 * socket server in a temporary directory that records every connection and request line and
 * answers each request as the test says — a protocol answer, a raw text, silence, or a close
 * without an answer. Speaks the node IPAM protocol only as far as a test needs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeIpamErrorKind, NodeIpamOp, NodeIpamRequest } from 'blockipam/core/node-ipam/protocol';

/** What the agent does with one request. */
export type AgentReply =
  | { readonly outcome: unknown }
  | { readonly error: { readonly kind: NodeIpamErrorKind; readonly message: string } }
  /** These bytes, as they are (a malformed answer), then close. */
  | { readonly raw: string }
  /** Close the connection without answering. */
  | { readonly close: true }
  /** Keep the connection open and never answer. */
  | { readonly silent: true }
  /** `then`, once `after` resolves (an agent slow to answer). */
  | { readonly after: Promise<void>; readonly then: AgentReply };

/** Outcomes that succeed, per operation. */
export const okOutcomes: Readonly<Record<NodeIpamOp, unknown>> = {
  add: { kind: 'allocated', ips: [{ address: '10.244.0.5/26', gateway: '10.244.0.1' }] },
  del: { released: 1 },
  check: { kind: 'ok' },
  gc: { released: [], errors: [], aliveElsewhere: [] },
  status: { kind: 'ready' },
};

export interface FakeAgent {
  readonly socket: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Requests received, decoded (a line that is not JSON is kept as its text). */
  readonly requests: (NodeIpamRequest | string)[];
  /** Resolves once `n` connections have been accepted. */
  connected(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the stand-in.
 * @param reply what to do with a request (default: the op's {@link okOutcomes})
 */
export async function fakeAgent(
  reply: (req: NodeIpamRequest) => AgentReply = (req) => ({ outcome: okOutcomes[req.op] }),
): Promise<FakeAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-agent-'));
  const socket = join(dir, 'ipam.sock');
  const requests: (NodeIpamRequest | string)[] = [];
  const open = new Set<Socket>();
  let connections = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((s) => {
    connections++;
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
    for (const w of waiters.filter((x) => connections >= x.n)) w.resolve();
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const line = buf.slice(0, nl);
      let req: NodeIpamRequest;
      try {
        req = JSON.parse(line) as NodeIpamRequest;
      } catch {
        requests.push(line);
        s.destroy();
        return;
      }
      requests.push(req);
      answer(s, reply(req));
    });
  });
  const answer = (s: Socket, r: AgentReply): void => {
    if ('silent' in r) return;
    if ('after' in r) void r.after.then(() => answer(s, r.then));
    else if ('close' in r) s.end();
    else if ('raw' in r) s.end(r.raw);
    else if ('error' in r) s.end(`${JSON.stringify({ v: 1, ok: false, error: r.error })}\n`);
    else s.end(`${JSON.stringify({ v: 1, ok: true, outcome: r.outcome })}\n`);
  };
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    get connections() {
      return connections;
    },
    requests,
    connected: (n) =>
      connections >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A stand-in for the node agent's IPAM socket (the real server is block-controller's): a Unix
 * socket server in a temporary directory that records every connection and request line and
 * answers each request as the test says — core/cni's dispatcher run on the request with an IPAM
 * client giving an outcome or an error kind (as the agent does), a protocol answer, a raw text,
 * silence, or a close without an answer. Speaks the node IPAM protocol v2 only as far as a test
 * needs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dispatch, errorOfKind, type IpamClient } from 'blockipam/core/cni';
import type {
  CniCallRequest,
  CniCallResponse,
  NodeIpamErrorKind,
  NodeIpamOp,
} from 'blockipam/core/node-ipam/protocol';

/** What the agent does with one request. */
export type AgentReply =
  /** The call run by core/cni's dispatcher; each IPAM operation answers this (per op: a function). */
  | { readonly outcome: unknown }
  /** The call run by core/cni's dispatcher; each IPAM operation fails with this kind. */
  | { readonly error: { readonly kind: NodeIpamErrorKind; readonly message: string } }
  /** This answer, as it is. */
  | { readonly answer: Omit<CniCallResponse, 'v'> }
  /** These bytes, as they are (a malformed answer), then close. */
  | { readonly raw: string }
  /** Close the connection without answering. */
  | { readonly close: true }
  /** Keep the connection open and never answer. */
  | { readonly silent: true }
  /** `then`, once `after` resolves (an agent slow to answer). */
  | { readonly after: Promise<void>; readonly then: AgentReply };

/** `outcome` of the default reply: each operation's {@link okOutcomes}. */
export const okOutcome = (op: NodeIpamOp): unknown => okOutcomes[op];

/** Runs `req` through core/cni's dispatcher with an IPAM client that answers as `r` says. */
async function run(
  req: CniCallRequest,
  r: Extract<AgentReply, { outcome: unknown } | { error: unknown }>,
  calls: { op: NodeIpamOp; call: unknown }[],
): Promise<CniCallResponse> {
  let stdout = '';
  let stderr = '';
  const op =
    (name: NodeIpamOp) =>
    (call: unknown): Promise<never> => {
      calls.push({ op: name, call });
      if ('error' in r) return Promise.reject(errorOfKind(r.error.kind, `node agent: ${r.error.message}`));
      const outcome =
        typeof r.outcome === 'function' ? (r.outcome as (o: NodeIpamOp) => unknown)(name) : r.outcome;
      return Promise.resolve(outcome as never);
    };
  const client = {
    path: 'agent',
    add: op('add'),
    del: op('del'),
    check: op('check'),
    gc: op('gc'),
    status: op('status'),
    close: () => Promise.resolve(),
  } as IpamClient;
  const code = await dispatch(
    {
      env: req.env,
      readStdin: () => req.stdin,
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
    },
    {
      client: () => Promise.resolve(client),
      logger: (o) => ({
        log: (level, msg) => (level === 'error' || level === 'warn' ? o.stderr.write(`${msg}\n`) : undefined),
        bind: () => undefined,
        close: () => undefined,
      }),
    },
  );
  return { v: 2, code, stdout, stderr };
}

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
  readonly requests: (CniCallRequest | string)[];
  /** The node IPAM calls the dispatcher made, in order. */
  readonly calls: { readonly op: NodeIpamOp; readonly call: unknown }[];
  /** Resolves once `n` connections have been accepted. */
  connected(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the stand-in.
 * @param reply what to do with a request (default: the op's {@link okOutcomes})
 */
export async function fakeAgent(
  reply: (req: CniCallRequest) => AgentReply = () => ({ outcome: okOutcome }),
): Promise<FakeAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-agent-'));
  const socket = join(dir, 'ipam.sock');
  const requests: (CniCallRequest | string)[] = [];
  const calls: { op: NodeIpamOp; call: unknown }[] = [];
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
      let req: CniCallRequest;
      try {
        req = JSON.parse(line) as CniCallRequest;
      } catch {
        requests.push(line);
        s.destroy();
        return;
      }
      requests.push(req);
      answer(s, reply(req), req);
    });
  });
  const answer = (s: Socket, r: AgentReply, req: CniCallRequest): void => {
    if ('silent' in r) return;
    if ('after' in r) void r.after.then(() => answer(s, r.then, req));
    else if ('close' in r) s.end();
    else if ('raw' in r) s.end(r.raw);
    else if ('answer' in r) s.end(`${JSON.stringify({ v: 2, ...r.answer })}\n`);
    else void run(req, r, calls).then((a) => s.end(`${JSON.stringify(a)}\n`));
  };
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    calls,
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

/**
 * The agent's IPAM server (docs/design-agent.md §IPAM server): serves its node's CNI calls on a
 * root-only Unix socket, one call per connection, in the node IPAM wire v3 (core/node-ipam
 * wire.ts). The hand-off with the plugin's forwarder:
 *
 * 1. read the request (at most 10 s from accept, bounded in bytes);
 * 2. answer NOT_SERVED — nothing done — when the request is not v3 or malformed, the client's
 *    deadline has passed, the client has gone, the connection is past `maxConnections`, or the
 *    command's watches are not synced ({@link IpamServerOptions.serves}); else READY;
 * 3. wait for the client's GO (its commitment: it will not take its direct path); without it —
 *    the client closed, or its deadline passed — nothing is started;
 * 4. on GO, re-check the deadline and the client, run the call (cni-call.ts) with a signal that
 *    fires when the client closes or the call's budget ends (every block write re-checks it), and
 *    answer RESULT.
 */
import { lstatSync, statSync, unlinkSync, utimes } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import {
  agentSocketPath,
  MAX_AGENT_SOCKET_BYTES,
  GO,
  notServedMessage,
  parseRequestBody,
  parseRequestHeader,
  READY,
  REQUEST_HEADER_BYTES,
  resultMessage,
} from 'blockipam/core/node-ipam';
import type { CallRequest } from 'blockipam/core/node-ipam';
import { errorFields, F } from '../../shared/index.ts';
import type { Logger } from '../../shared/index.ts';
import { countAddFailure } from '../metrics.ts';
import type { AgentMetrics } from '../metrics.ts';
import { serveCall } from './cni-call.ts';
import type { CallRecord, CallServiceOptions } from './cni-call.ts';
import { msUntil } from './deadline.ts';
import { listenRootOnly, prepareSocketDir, removeStaleSocket } from './socket-path.ts';

/**
 * 10 s from accept to a complete request (absolute: a client trickling a byte at a time is
 * closed at it too): the forwarder writes its request right after connect.
 */
const READ_DEADLINE_MS = 10_000;
/**
 * 256 open connections at most. A node runs 110 pods by default (the kubelet's maxPods), so a
 * restart of every pod at once is ~220 CNI calls (a DEL and an ADD each), plus STATUS polls;
 * each connection holds a file descriptor, and 256 leaves most of a 1,024 descriptor limit to
 * the agent's watches and HTTP server. Past it a connection is answered NOT_SERVED (busy): its
 * client takes the direct path.
 */
const MAX_CONNECTIONS = 256;
/**
 * The heartbeat: every 200 ms while its event loop runs, the server sets its socket's mtime to
 * now. A forwarder with no READY by its ack bound waits on while the mtime is fresh (a busy
 * agent answers late; falling back would put the burst on the direct path's host lock) and takes
 * the direct path once it is stale (a stopped or blocked agent).
 */
const HEARTBEAT_MS = 200;

/** Where a connection is in the hand-off (for {@link IpamServerOptions.pause}). */
export type HandOffStep = 'accepted' | 'read' | 'ready';

export interface IpamServerOptions extends CallServiceOptions {
  /**
   * The netconf's `ipam.agentSocket`; the socket is bound at core's agentSocketPath of it (the
   * protocol version appended), its directory made root-owned 0700.
   */
  readonly path: string;
  /** Why `command` cannot be served now (answered NOT_SERVED), or undefined to serve it. */
  readonly serves: (command: string) => string | undefined;
  readonly metrics: Pick<AgentMetrics, 'ipamRequests' | 'ipamRequestSeconds' | 'cniAddFailures'>;
  /** ms from accept to a complete request, then the connection is closed. Default READ_DEADLINE_MS. */
  readonly readDeadlineMs?: number;
  /** Connections open at once; one more is answered NOT_SERVED. Default MAX_CONNECTIONS. */
  readonly maxConnections?: number;
  /** Awaited at each step of the hand-off: tests stall the agent there. Default none. */
  readonly pause?: (step: HandOffStep) => Promise<void> | void;
}

export interface IpamServer {
  /** The bound socket's path (agentSocketPath of the option). */
  readonly path: string;
  /** Requests being served now. */
  readonly inFlight: number;
  /**
   * Stops accepting, waits for the requests in flight (at most `drainMs`), removes the socket —
   * only while the path is still the socket this server bound (same device and inode): a
   * successor agent may have bound its own there meanwhile. Idempotent.
   */
  close(drainMs: number): Promise<void>;
}

/**
 * Starts the server: prepares the directory, removes a stale socket, listens (socket 0600).
 * @throws Error naming the path when the directory or an existing file there is unusable, or the
 *   versioned path is longer than a socket path may be
 */
export async function startIpamServer(options: IpamServerOptions): Promise<IpamServer> {
  const { log, node } = options;
  const path = agentSocketPath(options.path);
  if (Buffer.byteLength(options.path) > MAX_AGENT_SOCKET_BYTES)
    throw new Error(
      `IPAM socket ${options.path}: over ${MAX_AGENT_SOCKET_BYTES} bytes (${path} must fit sun_path)`,
    );
  prepareSocketDir(path);
  await removeStaleSocket(path);
  const inFlight = new Set<Promise<void>>();
  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  let open = 0;
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => undefined);
    if (open >= maxConnections) {
      report(options, { op: 'unknown', outcome: 'not_served' }, 0);
      // what the client sent is read and dropped, so that its close ends the socket
      socket.once('end', () => socket.destroy()).resume();
      socket.end(notServedMessage(`busy: ${maxConnections} connections open (maxConnections)`));
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
    const work = serveConnection(socket, options);
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  server.on('error', (error) => log.warn('IPAM socket error', { [F.path]: path, ...errorFields(error) }));
  await listenRootOnly(server, path);
  const bound = statSync(path);
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(path, now, now, () => undefined);
  }, HEARTBEAT_MS).unref();
  log.info('IPAM server listening', { [F.node]: node, [F.path]: path });
  let closing: Promise<void> | undefined;
  return {
    path,
    get inFlight() {
      return inFlight.size;
    },
    close(drainMs) {
      return (closing ??= (async () => {
        clearInterval(heartbeat);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), drainMs)));
        const drained = await Promise.race([Promise.allSettled([...inFlight]).then(() => true), timedOut]);
        clearTimeout(timer);
        if (!drained) log.warn('IPAM requests still in flight at shutdown', { [F.count]: inFlight.size });
        unlinkIfSame(path, bound, log);
        if (drained) await closed;
      })());
    },
  };
}

/**
 * Removes `path` if it is still the socket `bound` (device and inode); a successor's socket
 * there is left alone (logged). Closing the listener already removed our file (libuv unlinks a
 * pipe server's path), so this is a guard for a runtime that does not; the check and the unlink
 * are not atomic, and a successor binding in between is not covered.
 */
function unlinkIfSame(path: string, bound: { dev: number; ino: number }, log: Logger): void {
  try {
    const now = lstatSync(path);
    if (now.dev !== bound.dev || now.ino !== bound.ino) {
      log.info('IPAM socket path bound by another server: left in place', { [F.path]: path });
      return;
    }
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A connection's client: its bytes as they come, and whether it has gone. */
class Client {
  #buffered = Buffer.alloc(0);
  #wake: (() => void) | undefined;
  readonly gone = new AbortController();

  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffered = Buffer.concat([this.#buffered, chunk]);
      this.#wake?.();
    });
    const leave = (): void => {
      this.gone.abort(new Error('the client closed the connection'));
      this.#wake?.();
    };
    socket.once('end', leave);
    socket.once('close', leave);
  }

  /** The next `n` bytes, or undefined when the client goes or `deadline` (a timer) fires first. */
  async take(n: number, deadline: Promise<void>): Promise<Buffer | undefined> {
    let expired = false;
    void deadline.then(() => {
      expired = true;
      this.#wake?.();
    });
    while (this.#buffered.length < n) {
      if (expired || this.gone.signal.aborted) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    const bytes = this.#buffered.subarray(0, n);
    this.#buffered = this.#buffered.subarray(n);
    return bytes;
  }
}

const timer = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)).unref());

/** Serves one connection through the hand-off; never rejects. */
async function serveConnection(socket: Socket, options: IpamServerOptions): Promise<void> {
  const started = performance.now();
  const client = new Client(socket);
  const record: CallRecord = { op: 'unknown' };
  const end = (bytes?: Buffer): Promise<void> =>
    new Promise<void>((resolve) => {
      if (bytes === undefined || client.gone.signal.aborted) {
        socket.destroy();
        resolve();
      } else socket.end(bytes, resolve);
    });
  const notServed = async (reason: string, outcome = 'not_served'): Promise<void> => {
    record.outcome = outcome;
    options.log.debug('IPAM call not served', { [F.node]: options.node, op: record.op, reason });
    report(options, record, (performance.now() - started) / 1000);
    await end(outcome === 'client_gone' ? undefined : notServedMessage(reason));
  };
  await options.pause?.('accepted');
  const request = await readRequest(client, options.readDeadlineMs ?? READ_DEADLINE_MS);
  await options.pause?.('read');
  if (typeof request === 'string')
    return notServed(request, client.gone.signal.aborted ? 'client_gone' : undefined);
  const command = request.env.CNI_COMMAND ?? '';
  record.op = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'].includes(command)
    ? command.toLowerCase()
    : 'unknown';
  const refused = startProblem(client, request) ?? options.serves(command);
  if (refused !== undefined)
    return notServed(refused, client.gone.signal.aborted ? 'client_gone' : undefined);
  socket.write(Buffer.of(READY));
  await options.pause?.('ready');
  const go = await client.take(1, timer(msUntil(request.deadlineNs)));
  const late = go?.[0] === GO ? startProblem(client, request) : 'no GO from the client';
  if (late !== undefined) return notServed(late, client.gone.signal.aborted ? 'client_gone' : undefined);
  const { response } = await serveCall(request, client.gone.signal, record, options);
  report(options, record, (performance.now() - started) / 1000);
  await end(resultMessage(response.code, response.stdout, response.stderr));
  socket.destroySoon();
}

/** Why a call must not start now: its client has gone, or its deadline has passed. */
function startProblem(client: Client, request: CallRequest): string | undefined {
  if (client.gone.signal.aborted) return 'the client has gone';
  if (msUntil(request.deadlineNs) <= 0) return "the client's deadline has passed";
  return undefined;
}

/**
 * One request, complete within `deadlineMs` of accept.
 * @returns the request, or why it cannot be served (the client went away or took too long, the
 *   header names another version or a size over its bound, an env entry is not NAME=value)
 */
async function readRequest(client: Client, deadlineMs: number): Promise<CallRequest | string> {
  const deadline = timer(deadlineMs);
  const head = await client.take(REQUEST_HEADER_BYTES, deadline);
  if (head === undefined) return 'no complete request';
  const header = parseRequestHeader(head);
  if ('problem' in header) return header.problem;
  const body = await client.take(header.envBytes + header.stdinBytes, deadline);
  if (body === undefined) return 'no complete request';
  const request = parseRequestBody(header, body);
  return 'problem' in request ? request.problem : request;
}

/** Counts one connection (`record`'s op and outcome) and its duration. */
function report(options: IpamServerOptions, record: CallRecord, seconds: number): void {
  const { op } = record;
  const outcome = record.outcome ?? 'ok';
  options.metrics.ipamRequests.inc({ node: options.node, op, outcome });
  options.metrics.ipamRequestSeconds.observe({ node: options.node, op }, seconds);
  countAddFailure(options.metrics, options.node, record.add);
  if (record.outcome !== 'not_served' && record.outcome !== 'client_gone')
    options.log.debug('IPAM request', {
      [F.node]: options.node,
      op,
      outcome,
      [F.durationMs]: Math.round(seconds * 1000),
    });
}

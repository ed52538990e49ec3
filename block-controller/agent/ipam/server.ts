/**
 * The agent's IPAM server (docs/design-agent.md §IPAM server): serves its node's CNI calls on a
 * root-only Unix socket, one call per connection, in the node IPAM protocol v2 of core/node-ipam
 * (the call forwarded whole). A connection sends one JSON request and a newline (at most
 * MAX_REQUEST_BYTES); the server runs the call through core/cni's dispatcher with its node's
 * NodeIpam (cni-call.ts), budgeted by the netconf's `ipam.timeoutMs`, writes one JSON answer —
 * exit code, stdout, stderr — and a newline, and closes. Every outcome it decides is a CNI error
 * document: until the agent has synced its view (and once it is stopping) a call is CNI 11, never
 * answered from a guess (STATUS asks the API server instead); so is every connection past
 * `maxConnections` (busy); a request that does not parse, or of another version, is CNI 999
 * naming the field or both versions.
 */
import { lstatSync, statSync, unlinkSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { errorOfKind, errorVersion, toErrorDocument } from 'blockipam/core/cni';
import { MAX_REQUEST_BYTES, NODE_IPAM_PROTOCOL, parseCallRequest } from 'blockipam/core/node-ipam';
import type { CniCallResponse, NodeIpam, NodeIpamErrorKind } from 'blockipam/core/node-ipam';
import { errorFields, F } from '../../shared/index.ts';
import { requestCniVersion } from './request-version.ts';
import type { Logger } from '../../shared/index.ts';
import { countAddFailure } from '../metrics.ts';
import type { AgentMetrics } from '../metrics.ts';
import { serveCall } from './cni-call.ts';
import type { CallRecord } from './cni-call.ts';
import { listenRootOnly, prepareSocketDir, removeStaleSocket } from './socket-path.ts';

/**
 * 10 s from accept to a complete request (absolute, not idle: a client trickling a byte at a
 * time is closed at it too): the plugin writes its request right after connect, so a client
 * that has not finished by then is gone or broken; the connection is closed without an answer.
 */
export const READ_DEADLINE_MS = 10_000;
/**
 * 256 open connections at most. A node runs 110 pods by default (the kubelet's maxPods), so a
 * restart of every pod at once is ~220 CNI calls (a DEL and an ADD each), plus STATUS polls;
 * each connection holds a file descriptor, and 256 leaves most of a 1,024 descriptor limit to
 * the agent's watches and HTTP server. Past it a connection is answered `notReady` (busy; the
 * plugin's CNI 11, try again later) and closed, unread.
 */
export const MAX_CONNECTIONS = 256;
/** Busy refusals are logged at most once per this many ms (ms; each is counted in the metric). */
const BUSY_LOG_INTERVAL_MS = 10_000;
/** A refused (busy) connection is closed at most this long after accept (ms). */
const BUSY_LINGER_MS = 1000;
/**
 * A refused (busy) connection that has sent nothing this long after accept (ms) is answered in
 * 1.1.0: the plugin writes right after connect, so only a stalled or foreign client waits it out,
 * and half of BUSY_LINGER_MS leaves it the other half to read the answer.
 */
const BUSY_ANSWER_MS = BUSY_LINGER_MS / 2;

export interface IpamServerOptions {
  /** The socket's path (its directory is made root-owned 0700). */
  readonly path: string;
  readonly node: string;
  /**
   * The service, or why there is none to serve with yet: a string is the `notReady` message
   * (not synced, stopping).
   */
  readonly ipam: () => NodeIpam | string;
  /** STATUS while `ipam` gives no service (cni-call.ts CallServiceOptions.statusWithoutService). */
  readonly statusWithoutService?: NodeIpam['status'];
  readonly log: Logger;
  readonly metrics: Pick<AgentMetrics, 'ipamRequests' | 'ipamRequestSeconds' | 'cniAddFailures'>;
  /** ms from accept to a complete request, then the connection is closed. Default READ_DEADLINE_MS. */
  readonly readDeadlineMs?: number;
  /** Connections open at once; one more is answered busy. Default MAX_CONNECTIONS. */
  readonly maxConnections?: number;
}

export interface IpamServer {
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
 * An answer the agent decides without running the call: exit code 1 and the CNI error document
 * of `kind` (core/cni errorOfKind: notReady 11, badRequest 999) with `message` as its details
 * (bounded by core/cni's toErrorDocument), in `cniVersion` — the call's netconf's as far as it
 * could be read (errorVersion of a parsed request's stdin, else requestCniVersion of the bytes
 * read), else 1.1.0.
 */
const failure = (kind: NodeIpamErrorKind, message: string, cniVersion: string): CniCallResponse => ({
  v: NODE_IPAM_PROTOCOL,
  code: 1,
  stdout: `${JSON.stringify(toErrorDocument(errorOfKind(kind, message), cniVersion))}\n`,
  stderr: '',
});

/**
 * Starts the server: prepares the directory, removes a stale socket, listens (socket 0600).
 * @throws Error naming the path when the directory or an existing file there is unusable
 */
export async function startIpamServer(options: IpamServerOptions): Promise<IpamServer> {
  const { log, node } = options;
  prepareSocketDir(options.path);
  await removeStaleSocket(options.path);
  const inFlight = new Set<Promise<void>>();
  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  let open = 0;
  // busy refusals are counted in the request metric; the log gets one line per 10 s at most
  const busy = { refused: 0, loggedAt: -Infinity };
  // allowHalfOpen: a client may end its side right after the request (the plugin does); the
  // answer still has to go out on ours.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    if (open >= maxConnections) {
      refuseBusy(socket, options, maxConnections);
      busy.refused += 1;
      if (performance.now() - busy.loggedAt >= BUSY_LOG_INTERVAL_MS) {
        log.warn('IPAM connections refused: busy', {
          [F.count]: busy.refused,
          maxConnections,
        });
        busy.refused = 0;
        busy.loggedAt = performance.now();
      }
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
    const work = serveConnection(socket, options);
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  server.on('error', (error) =>
    log.warn('IPAM socket error', { [F.path]: options.path, ...errorFields(error) }),
  );
  await listenRootOnly(server, options.path);
  const bound = statSync(options.path);
  log.info('IPAM server listening', { [F.node]: node, [F.path]: options.path });
  let closing: Promise<void> | undefined;
  return {
    path: options.path,
    get inFlight() {
      return inFlight.size;
    },
    close(drainMs) {
      return (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), drainMs)));
        const drained = await Promise.race([Promise.allSettled([...inFlight]).then(() => true), timedOut]);
        clearTimeout(timer);
        if (!drained) log.warn('IPAM requests still in flight at shutdown', { [F.count]: inFlight.size });
        unlinkIfSame(options.path, bound, log);
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

/**
 * Answers a connection past `maxConnections` `notReady` (busy) without serving it: at the
 * client's first bytes (the plugin writes its request right after connect), in the cniVersion
 * they name (requestCniVersion), or at their end or BUSY_ANSWER_MS without any, in 1.1.0. Closes
 * it when the client ends, or BUSY_LINGER_MS after accept: a refused connection holds its
 * descriptor at most that long, not up to the read deadline. Counted in the request metric, not
 * logged (the caller logs refusals at most once per BUSY_LOG_INTERVAL_MS).
 */
function refuseBusy(socket: Socket, options: IpamServerOptions, maxConnections: number): void {
  let answered = false;
  const answer = (head?: Buffer): void => {
    if (answered) return;
    answered = true;
    clearTimeout(silent);
    const message = `busy: ${maxConnections} connections open (maxConnections); try again`;
    const response = failure('notReady', message, requestCniVersion(head));
    report(options, { op: 'unknown', outcome: 'error_notReady' }, response, 0, false);
    socket.end(`${JSON.stringify(response)}\n`);
  };
  const silent = setTimeout(() => answer(), BUSY_ANSWER_MS);
  // what the client sends past its first bytes is read and dropped (closing with it unread
  // resets the connection before the client reads the answer)
  const timer = setTimeout(() => socket.destroy(), BUSY_LINGER_MS);
  socket.once('close', () => {
    clearTimeout(timer);
    clearTimeout(silent);
  });
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => answer(chunk));
  socket.on('end', () => {
    answer();
    socket.destroy();
  });
}

/** Reads one request from `socket`, answers it, closes. Never rejects. */
async function serveConnection(socket: Socket, options: IpamServerOptions): Promise<void> {
  const started = performance.now();
  const read = await readRequest(socket, options.readDeadlineMs ?? READ_DEADLINE_MS);
  if (read === undefined) {
    socket.destroy();
    return;
  }
  let record: CallRecord = { op: 'unknown', outcome: 'error_badRequest' };
  let response: CniCallResponse;
  if ('problem' in read) response = failure('badRequest', read.problem, requestCniVersion(read.head));
  else {
    const parsed = parseCallRequest(read.doc);
    if ('problem' in parsed)
      response = failure('badRequest', parsed.problem, errorVersion(stdinOf(read.doc)));
    else ({ response, record } = await serveCall(parsed, started, options));
  }
  report(options, record, response, (performance.now() - started) / 1000);
  await new Promise<void>((resolve) => socket.end(`${JSON.stringify(response)}\n`, resolve));
  socket.destroySoon();
}

/** A refused request's `stdin` when it has one as a string (its cniVersion names the error's). */
function stdinOf(doc: unknown): string | undefined {
  const stdin = (doc as { stdin?: unknown } | null)?.stdin;
  return typeof stdin === 'string' ? stdin : undefined;
}

/** A request that could not be read as JSON: why, and its first bytes (for the answer's cniVersion). */
interface Unreadable {
  readonly problem: string;
  readonly head: Buffer | undefined;
}

/**
 * One request's text: up to the first newline (or the end of the stream), at most
 * MAX_REQUEST_BYTES, complete within `deadlineMs` of the call (accept). @returns the decoded
 * JSON, a problem (too large, not JSON) with the first bytes read, or undefined when the client
 * went away or did not finish in time
 */
function readRequest(socket: Socket, deadlineMs: number): Promise<{ doc: unknown } | Unreadable | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: { doc: unknown } | Unreadable | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      // Whatever more the client sends is read and dropped: a paused socket could stall a
      // client still writing an oversized request, which would then never read its answer.
      socket.removeAllListeners('data');
      socket.on('data', () => undefined);
      resolve(result);
    };
    const decode = (bytes: Buffer): void => {
      try {
        finish({ doc: JSON.parse(bytes.toString('utf8')) as unknown });
      } catch (error) {
        finish({ problem: `request: not JSON (${(error as Error).message})`, head: bytes });
      }
    };
    const deadline = setTimeout(() => finish(undefined), deadlineMs);
    socket.on('error', () => finish(undefined));
    socket.on('end', () => (size === 0 ? finish(undefined) : decode(Buffer.concat(chunks))));
    socket.on('data', (chunk: Buffer) => {
      const newline = chunk.indexOf(0x0a);
      const take = newline >= 0 ? chunk.subarray(0, newline) : chunk;
      size += take.length;
      if (size > MAX_REQUEST_BYTES) {
        finish({ problem: `request: larger than ${MAX_REQUEST_BYTES} bytes`, head: chunks[0] ?? take });
        return;
      }
      chunks.push(take);
      if (newline >= 0) decode(Buffer.concat(chunks));
    });
  });
}

/**
 * Counts one answered request and logs it at debug (the call itself logged its lines through
 * the agent's logger); a request refused before it ran — malformed, another version — at warn.
 */
function report(
  options: IpamServerOptions,
  record: CallRecord,
  response: CniCallResponse,
  seconds: number,
  logged = true,
): void {
  const { op } = record;
  const outcome = record.outcome ?? (response.code === 0 ? 'ok' : 'error_internal');
  options.metrics.ipamRequests.inc({ node: options.node, op, outcome });
  options.metrics.ipamRequestSeconds.observe({ node: options.node, op }, seconds);
  countAddFailure(options.metrics, options.node, record.add);
  if (!logged) return;
  const fields = { [F.node]: options.node, op, outcome, [F.durationMs]: Math.round(seconds * 1000) };
  if (op !== 'unknown') options.log.debug('IPAM request', fields);
  else options.log.warn('IPAM request refused', { ...fields, [F.error]: response.stdout.trim() });
}

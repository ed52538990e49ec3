/**
 * The thin client (docs/design-plugin.md §Thin client): forwards one CNI call to the node agent
 * over its Unix socket (netconf `ipam.agentSocket`) in the node IPAM protocol
 * (blockipam/core/node-ipam/protocol) — one request, one JSON line each way — and turns the
 * answer into an outcome or a CniError. Loads the protocol module and a socket client
 * (host/unix-socket.ts), nothing of core's allocator, the Kubernetes transport or the host lock.
 *
 * Fallback rule: the direct path may serve a call only when connect() fails — the agent never
 * saw it (see {@link FALLBACK_ERRNOS}). Once the connection is accepted nothing falls back: a
 * request may have reached the agent, and serving it twice (an ADD allocated by both) would
 * leak an address. After the request is sent: no answer within `ipam.timeoutMs`, a connection
 * closed or reset without an answer → CNI 11 (the runtime retries, or DELs what may have been
 * written); an answer that does not parse → 999 naming the problem.
 */
import {
  NODE_IPAM_PROTOCOL,
  parseResponse,
  type NodeIpamOp,
  type NodeIpamOps,
  type NodeIpamRequest,
} from 'blockipam/core/node-ipam/protocol';
import type { IpamClient } from './client.ts';
import { CniCode, CniError, errorOfKind } from '../cni/errors.ts';
import { connectUnix, type ConnectError, type UnixConn, type UnixEvents } from '../host/unix-socket.ts';

/**
 * connect() errors that send the call to the direct path, with why each is safe (connect failed:
 * the agent has not seen the request) and what it usually means:
 * - ENOENT: no socket file — no agent on this node (standalone install), or not started yet;
 * - ENOTDIR: a directory of the path is a file — no agent there either;
 * - ECONNREFUSED: a socket file nobody listens on — the agent died or is restarting (Linux also
 *   answers it for a path that is not a socket);
 * - ENOTSOCK: the path is not a socket;
 * - EACCES / EPERM: this process may not connect (the socket is root-only and the runtime is
 *   not root); the direct path then needs its own credential, and logs say why it was taken.
 * Any other connect() failure — EAGAIN (the agent's accept queue is full: it is alive, and a
 * burst falling back would compete with its batching), a connect that does not complete within
 * the budget — is CNI 11, try again later.
 */
export const FALLBACK_ERRNOS: ReadonlySet<string> = new Set([
  'ENOENT',
  'ENOTDIR',
  'ECONNREFUSED',
  'ENOTSOCK',
  'EACCES',
  'EPERM',
]);

/** Answers larger than this are refused (bytes; an answer is well under 1 KiB). */
const MAX_RESPONSE_BYTES = 1 << 20;

/**
 * The agent's budget: `timeoutMs` less a margin (a tenth, at most 1 s), so that the agent's own
 * `timeout` answer reaches the plugin before the plugin stops waiting at `timeoutMs`.
 */
export const agentBudgetMs = (timeoutMs: number): number =>
  timeoutMs - Math.min(1_000, Math.floor(timeoutMs / 10));

export type AgentConnection =
  | { readonly ok: true; readonly client: IpamClient }
  /** connect() failed with one of {@link FALLBACK_ERRNOS}: the direct path may serve the call. */
  | { readonly ok: false; readonly errno: string; readonly message: string };

export interface AgentOptions {
  /** The agent's socket (netconf `ipam.agentSocket`). */
  readonly socket: string;
  /** The call's budget, ms (netconf `ipam.timeoutMs`): connect, send and answer. */
  readonly timeoutMs: number;
}

/**
 * Connects to the agent's socket.
 * @returns a client for one call, or the connect() failure that allows the direct path
 * @throws CniError 11 for any other connect() failure, or no connection within `timeoutMs`
 */
export async function connectAgent(o: AgentOptions): Promise<AgentConnection> {
  const deadline = performance.now() + o.timeoutMs;
  const reader = answerReader(o);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CniError(
            CniCode.tryAgainLater,
            'node agent did not accept the connection',
            `${o.socket}: no connection within ${o.timeoutMs} ms (ipam.timeoutMs)`,
          ),
        ),
      o.timeoutMs,
    );
  });
  const connecting = connectUnix(o.socket, reader.events);
  let conn: UnixConn;
  try {
    conn = await Promise.race([connecting, late]);
  } catch (e) {
    if (e instanceof CniError) {
      void connecting.then(
        (c) => c.destroy(),
        () => undefined,
      );
      throw e;
    }
    const errno = (e as ConnectError).code ?? 'EUNKNOWN';
    if (FALLBACK_ERRNOS.has(errno)) return { ok: false, errno, message: (e as Error).message };
    throw new CniError(
      CniCode.tryAgainLater,
      'node agent socket busy or unusable',
      `${o.socket}: ${errno}: ${(e as Error).message}`,
    );
  } finally {
    clearTimeout(timer);
  }
  return { ok: true, client: agentClient(conn, reader, o, deadline) };
}

/** One call over an accepted connection; a second call on it is a programming error. */
function agentClient(conn: UnixConn, reader: AnswerReader, o: AgentOptions, deadline: number): IpamClient {
  let used = false;
  const call =
    <K extends NodeIpamOp>(op: K) =>
    async (c: NodeIpamOps[K]['call']): Promise<NodeIpamOps[K]['outcome']> => {
      if (used) throw new Error('agent client: one call per connection');
      used = true;
      const request = {
        v: NODE_IPAM_PROTOCOL,
        op,
        timeoutMs: agentBudgetMs(o.timeoutMs),
        call: c,
      } as NodeIpamRequest;
      conn.write(`${JSON.stringify(request)}\n`);
      try {
        const text = await reader.answer(Math.max(1, deadline - performance.now()));
        return outcomeOf(op, text);
      } finally {
        conn.destroy();
      }
    };
  return {
    path: 'agent',
    add: call('add'),
    del: call('del'),
    check: call('check'),
    gc: call('gc'),
    status: call('status'),
    close: () => {
      conn.destroy();
      return Promise.resolve();
    },
    stats: () => ({ agentSocket: o.socket }),
  };
}

interface AnswerReader {
  readonly events: UnixEvents;
  /**
   * The answer: up to its newline, or all the agent wrote before closing.
   * @throws CniError 11 when nothing answers within `waitMs`, or the connection is closed or
   *   reset without an answer; 999 when it exceeds {@link MAX_RESPONSE_BYTES}
   */
  answer(waitMs: number): Promise<string>;
}

/** Collects the answer from the connection's events (they may come before {@link AnswerReader.answer}). */
function answerReader(o: AgentOptions): AnswerReader {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let outcome: { text: string } | { error: CniError } | undefined;
  let settle: (() => void) | undefined;
  const again = (msg: string, details: string): CniError =>
    new CniError(CniCode.tryAgainLater, msg, `${o.socket}: ${details}; not retried on the direct path`);
  const finish = (r: { text: string } | { error: CniError }): void => {
    if (outcome) return;
    outcome = r;
    settle?.();
  };
  const text = (): string => Buffer.concat(chunks).toString('utf8');
  return {
    events: {
      data(chunk) {
        if (outcome) return;
        const nl = chunk.indexOf(10);
        const part = nl >= 0 ? chunk.subarray(0, nl) : chunk;
        chunks.push(part);
        size += part.length;
        if (size > MAX_RESPONSE_BYTES)
          finish({
            error: new CniError(
              CniCode.internal,
              'node agent answer malformed',
              `more than ${MAX_RESPONSE_BYTES} bytes without a newline`,
            ),
          });
        else if (nl >= 0) finish({ text: text() });
      },
      closed(error) {
        if (size > 0) finish({ text: text() });
        else if (error)
          finish({
            error: again('node agent connection failed', `${error.message} after the request was sent`),
          });
        else
          finish({
            error: again(
              'node agent closed the connection without an answer',
              'connection closed after the request',
            ),
          });
      },
    },
    answer(waitMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            finish({
              error: again(
                'node agent did not answer in time',
                `no answer within ${o.timeoutMs} ms of the call (ipam.timeoutMs) after the request was sent`,
              ),
            }),
          waitMs,
        );
        settle = () => {
          clearTimeout(timer);
          if (outcome && 'text' in outcome) resolve(outcome.text);
          else if (outcome) reject(outcome.error);
        };
        if (outcome) settle();
      });
    },
  };
}

/**
 * The outcome in an answer, or its error as a CniError: the kind's code (STATUS: `notReady` and
 * `unavailable` are 50, an ADD cannot be served now), 999 for an answer that does not parse.
 */
export function outcomeOf<K extends NodeIpamOp>(op: K, text: string): NodeIpamOps[K]['outcome'] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CniError(CniCode.internal, 'node agent answer malformed', `not JSON: ${(e as Error).message}`);
  }
  const r = parseResponse(op, doc);
  if ('problem' in r) throw new CniError(CniCode.internal, 'node agent answer malformed', r.problem);
  if (r.ok) return r.outcome;
  const statusDown = op === 'status' && (r.error.kind === 'notReady' || r.error.kind === 'unavailable');
  const error = errorOfKind(
    r.error.kind,
    `node agent: ${r.error.message}`,
    statusDown ? CniCode.notAvailable : undefined,
  );
  if (op === 'status' && r.error.kind === 'notReady') undecidedStatus.add(error);
  throw error;
}

/** STATUS failures the agent said it has not decided (see {@link agentStatusUndecided}). */
const undecidedStatus = new WeakSet<Error>();

/**
 * Whether the agent said it has not decided a STATUS: it answered `notReady` (not synced yet,
 * stopping, or busy). STATUS only reads, so the direct path may answer it instead, with what
 * is left of the budget (dispatch.ts): an agent restart must not turn its node's network
 * NotReady (found on the real cluster: the kubelet reported NetworkReady=false while the agent
 * synced, and the node was briefly tainted). Not a timeout, a malformed answer or a connection
 * closed without one: those are CNI 11 / 999 as for any command.
 */
export function agentStatusUndecided(e: unknown): boolean {
  return e instanceof Error && undecidedStatus.has(e);
}

/**
 * The thin client (docs/design-plugin.md §Thin client): forwards one CNI call whole to the node
 * agent over its Unix socket (netconf `ipam.agentSocket`) in the node IPAM protocol v2
 * (blockipam/core/node-ipam/protocol) — the CNI_* variables and stdin in one JSON line, the exit
 * code, stdout and stderr back in one — so the agent runs the CNI layer and this process only
 * copies bytes. Loads the protocol module, core/cni's error codes and a socket client
 * (host/unix-socket.ts): nothing of the dispatcher, the netconf validator, core's allocator, the
 * Kubernetes transport or the host lock.
 *
 * Fallback rule: the direct path may serve a call only when connect() fails — the agent never
 * saw it (see {@link FALLBACK_ERRNOS}). Once the connection is accepted nothing falls back: a
 * request may have reached the agent, and serving it twice (an ADD allocated by both) would
 * leak an address. After the request is sent: no answer within `ipam.timeoutMs`, a connection
 * closed or reset without an answer → CNI 11 (the runtime retries, or DELs what may have been
 * written); an answer that does not parse → 999 naming the problem.
 */
import {
  MAX_RESPONSE_BYTES,
  parseCallResponse,
  type CniCallRequest,
  type CniCallResponse,
} from 'blockipam/core/node-ipam/protocol';
import { CniCode, CniError } from 'blockipam/core/cni/errors';
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
 * Any other connect() failure — a connect that does not complete within the budget, an errno
 * not above — is CNI 11, try again later. A full accept queue (EAGAIN: the agent is alive, and a
 * burst falling back would compete with its batching) should be CNI 11 too, but Bun (1.4.5)
 * reports it as ECONNREFUSED, so this client cannot tell it from a dead agent and takes the
 * direct path; the native forwarder, the plugin the agent installs, waits in connect(2) for room
 * instead (docs/design-plugin.md §Fallback).
 */
export const FALLBACK_ERRNOS: ReadonlySet<string> = new Set([
  'ENOENT',
  'ENOTDIR',
  'ECONNREFUSED',
  'ENOTSOCK',
  'EACCES',
  'EPERM',
]);

export type AgentAnswer =
  | { readonly ok: true; readonly answer: CniCallResponse }
  /** connect() failed with one of {@link FALLBACK_ERRNOS}: the direct path may serve the call. */
  | { readonly ok: false; readonly errno: string; readonly message: string };

export interface AgentOptions {
  /** The agent's socket (netconf `ipam.agentSocket`). */
  readonly socket: string;
  /** The call's budget, ms (netconf `ipam.timeoutMs`): connect, send and answer. */
  readonly timeoutMs: number;
  /** The call (protocol.ts callRequest). */
  readonly request: CniCallRequest;
}

/**
 * Forwards the call to the agent: connects, writes the request, reads the answer.
 * @returns the agent's answer (validated: protocol.ts parseCallResponse), or the connect()
 *   failure that allows the direct path
 * @throws CniError 11 for any other connect() failure, no connection within `timeoutMs`, no
 *   complete answer within `timeoutMs` of the call, or a connection closed or reset without one;
 *   999 for an answer that is not the protocol's (over MAX_RESPONSE_BYTES, not JSON, another shape)
 */
export async function forwardCall(o: AgentOptions): Promise<AgentAnswer> {
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
  conn.write(`${JSON.stringify(o.request)}\n`);
  try {
    const text = await reader.answer(Math.max(1, deadline - performance.now()));
    return { ok: true, answer: answerOf(text) };
  } finally {
    conn.destroy();
  }
}

interface AnswerReader {
  readonly events: UnixEvents;
  /**
   * The answer, up to its newline (the agent ends every answer with one).
   * @throws CniError 11 when nothing answers within `waitMs`, or the connection is closed or
   *   reset before the newline (no answer, or one cut off); 999 when it exceeds
   *   {@link MAX_RESPONSE_BYTES}
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
        // the agent ends every answer with a newline: bytes without one are an answer cut off
        // (the agent went mid-write), so try again later rather than "malformed"
        if (size > 0)
          finish({
            error: again(
              'node agent answer incomplete',
              `${error ? error.message : 'connection closed'} after ${size} bytes of the answer, before its newline`,
            ),
          });
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

/** The answer in `text` (one JSON line). @throws CniError 999 naming the problem */
export function answerOf(text: string): CniCallResponse {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CniError(CniCode.internal, 'node agent answer malformed', `not JSON: ${(e as Error).message}`);
  }
  const r = parseCallResponse(doc);
  if ('problem' in r) throw new CniError(CniCode.internal, 'node agent answer malformed', r.problem);
  return r;
}

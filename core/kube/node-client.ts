/**
 * HTTP exchanges over node:https (node:http for a plain-HTTP server) with one keep-alive agent:
 * the client KubeTransport uses under Node (ipamctl, the controllers, tests). Bun's executable
 * uses fetch-client.ts instead (docs/design-plugin.md "Runtime").
 */
import type {
  Agent as HttpAgent,
  ClientRequest,
  IncomingMessage,
  RequestOptions as HttpRequestOptions,
} from 'node:http';
import https from 'node:https';
import type { KubeClientConfig } from './config.ts';

/** One HTTP answer, the parts the transport reads. */
export interface Exchange {
  status: number;
  text: string;
  /** the Retry-After header, when present */
  retryAfter: string | undefined;
}

/** One outgoing request: `path` includes the query string; `body` is JSON text. */
export interface Outgoing {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  /**
   * Deadline for the whole exchange in ms, from the request's creation to the last byte of the answer (connect,
   * TLS handshake, headers and body); on expiry the request is abandoned and `send` rejects
   * with `code` ETIMEDOUT.
   */
  timeoutMs: number;
  /** The caller's signal: when it fires the exchange is abandoned and `send` rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/**
 * Sends requests to one API server. `send` resolves with any HTTP answer and rejects only when
 * there is none; the error then carries a Node-style `code` (ECONNREFUSED, ECONNRESET,
 * ETIMEDOUT for the timeout, …) or a TLS verification code (UNABLE_TO_VERIFY_LEAF_SIGNATURE, …).
 */
export interface HttpClient {
  send(request: Outgoing): Promise<Exchange>;
  /** Closes idle keep-alive connections (lets the process exit). */
  close(): void;
}

interface NodeApi {
  request: (options: HttpRequestOptions, callback: (res: IncomingMessage) => void) => ClientRequest;
  agent: HttpAgent;
}

/**
 * A client over node:https (node:http, loaded only then, for an http:// server). Each request
 * runs under one deadline of `timeoutMs` (see {@link exchange}); on expiry the request and its
 * socket are destroyed.
 */
export function nodeClient(config: KubeClientConfig, url: URL): HttpClient {
  let api: Promise<NodeApi> | undefined;
  let ready: NodeApi | undefined;
  const connect = (): Promise<NodeApi> =>
    (api ??= (
      url.protocol === 'http:'
        ? // Loading node:http costs ~25 ms of CPU at start-up; only plain-HTTP servers (tests) need it.
          import('node:http').then((http) => ({
            request: http.request,
            agent: new http.Agent({ keepAlive: true }),
          }))
        : Promise.resolve({
            request: https.request,
            agent: new https.Agent({
              keepAlive: true,
              ca: config.ca,
              cert: config.cert,
              key: config.key,
              rejectUnauthorized: !config.insecureSkipTLSVerify,
            }),
          })
    ).then((a) => (ready = a)));
  return {
    async send(request) {
      return exchange(await connect(), url, request);
    },
    close() {
      ready?.agent.destroy();
      ready = undefined;
      api = undefined;
    },
  };
}

/**
 * One request under one deadline for the whole exchange (connect, TLS handshake, request,
 * headers, body), not a socket idle timeout: a server trickling bytes resets an idle timer
 * forever, and Node skips the first idle expiry while a write is pending (the request queued
 * behind an unfinished TLS handshake), so an idle timer alone fires at 2 × timeoutMs there. The
 * timer is cleared when the exchange settles, so a finished request never keeps the process alive.
 * @throws (rejects) an Error with `code` ETIMEDOUT after `timeoutMs`, the signal's reason when it
 *   fires first, or the socket's error
 */
function exchange(
  api: NodeApi,
  url: URL,
  { method, path, headers, body, timeoutMs, signal }: Outgoing,
): Promise<Exchange> {
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  const withLength =
    body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const fail = (error: Error): void => {
      if (settle()) reject(error);
    };
    const req = api.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        method,
        path,
        headers: withLength,
        agent: api.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (!settle()) return;
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, text, retryAfter: res.headers['retry-after'] });
        });
        res.on('error', fail);
        // A body cut short without an 'error' (defensive: Node 24 emits ECONNRESET "aborted").
        res.on('close', () =>
          fail(withCode('connection closed before the answer was complete', 'ECONNRESET')),
        );
      },
    );
    const deadline = setTimeout(() => {
      const error = withCode(`no complete answer within ${timeoutMs} ms`, 'ETIMEDOUT');
      fail(error);
      req.destroy(error);
    }, timeoutMs);
    function onAbort(): void {
      const reason = signal?.reason as Error;
      fail(reason);
      req.destroy(reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    req.end(body);
  });
}

function withCode(message: string, code: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

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
  timeoutMs: number;
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

/** A client over node:https (node:http, loaded only then, for an http:// server). */
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
    async send({ method, path, headers, body, timeoutMs }) {
      const client = await connect();
      const withLength =
        body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) };
      return new Promise((resolve, reject) => {
        const req = client.request(
          {
            protocol: url.protocol,
            hostname: url.hostname.replace(/^\[|\]$/g, ''),
            port: url.port,
            method,
            path,
            headers: withLength,
            agent: client.agent,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                text: Buffer.concat(chunks).toString('utf8'),
                retryAfter: res.headers['retry-after'],
              }),
            );
            res.on('error', reject);
          },
        );
        req.setTimeout(timeoutMs, () =>
          req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
        );
        req.on('error', reject);
        req.end(body);
      });
    },
    close() {
      ready?.agent.destroy();
      ready = undefined;
      api = undefined;
    },
  };
}

/**
 * A lean Kubernetes REST transport: JSON over node:https with one keep-alive agent (under Bun:
 * Bun's native fetch), bearer or client-certificate auth, a per-request timeout, and HTTP
 * failures mapped to blockipam's typed errors. It imports nothing heavy, so the CNI plugin's start-up stays ~30 ms (measured in
 * docs/design-core.md §5). Counts requests for the benchmarks.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AlreadyExistsError } from '../errors/already-exists.ts';
import { ApiError } from '../errors/api-error.ts';
import { ConflictError } from '../errors/conflict.ts';
import { DecodeError } from '../errors/decode-error.ts';
import { ExpiredError } from '../errors/expired.ts';
import { InvalidError } from '../errors/invalid.ts';
import { NotFoundError } from '../errors/not-found.ts';
import { ProxyError } from '../errors/proxy-error.ts';
import { RequestTimeoutError } from '../errors/request-timeout.ts';
import { TlsError } from '../errors/tls-error.ts';
import { UnavailableError } from '../errors/unavailable.ts';
import type { KubeClientConfig } from './config.ts';
import { fetchClient } from './fetch-client.ts';
import { KubeconfigError } from './kubeconfig-error.ts';
import { type Exchange, type HttpClient, nodeClient } from './node-client.ts';

/** Requests sent, total and per HTTP method. */
export interface TransportStats {
  requests: number;
  byMethod: Record<string, number>;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One request. */
export interface RequestOptions {
  /** Query parameters (values are URL-encoded here). */
  query?: Readonly<Record<string, string | undefined>>;
  /** JSON body. */
  body?: unknown;
  /** Accept header; default application/json. */
  accept?: string;
  /** Content-Type for the body; default application/json. */
  contentType?: string;
  /**
   * The caller's budget: once it has fired nothing more is sent (no retry, no 429 wait) and the
   * request rejects with `signal.reason` (not a transport error); a request in flight is
   * abandoned — a write already sent may still land. Independent of `timeoutMs`.
   */
  signal?: AbortSignal;
  /**
   * Told a 2xx answer's text before it is decoded (e.g. to read a LIST's continue token from its
   * head and ask for the next page while this one is parsed). Not called for other statuses.
   */
  onBody?: (text: string) => void;
}

// 30 s: API requests normally take milliseconds; this only bounds a hung connection.
const DEFAULT_TIMEOUT_MS = 30_000;
// 429 Too Many Requests is the API server's "retry later" (priority and fairness, or a CRD's
// storage still initialising right after it became Established). client-go retries it honouring
// Retry-After; so do we, boundedly: at most 5 retries, each wait capped at 1 s so a CNI call's
// budget is not spent here.
const MAX_429_RETRIES = 5;
const MAX_429_WAIT_MS = 1_000;
const DEFAULT_429_WAIT_MS = 200;
// 60 s: service-account tokens rotate hourly; re-reading the file each minute is plenty.
const TOKEN_FILE_TTL_MS = 60_000;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  // Bun's fetch names some of these its own way (it reports ECONNREFUSED, ECONNRESET and, since
  // oven-sh/bun#32990, ENOTFOUND; older builds and some paths still use these names).
  'ConnectionRefused',
  'ConnectionClosed',
  'DNS_ENOTFOUND',
  // fetch-client.ts: a socket that could not be opened with TLS material that is fine, and a
  // proxy (from the environment) that refused the tunnel.
  'FailedToOpenSocket',
  'EPROXY',
]);

/** Which HTTP client sends the requests; `auto` is `fetch` under Bun, `node` elsewhere. */
export type HttpClientKind = 'auto' | 'node' | 'fetch';

export class KubeTransport {
  readonly stats: TransportStats = { requests: 0, byMethod: {} };
  readonly #config: KubeClientConfig;
  readonly #client: HttpClient;
  readonly #timeoutMs: number;
  readonly #url: URL;
  #token: { value: string; readAt: number } | undefined;

  /**
   * @param options.timeoutMs per request, default 30 000 ms; on expiry → UnavailableError
   * @param options.client default `auto`: Bun's native fetch when running under Bun (the plugin
   *   executable: fetch-client.ts), node:https otherwise (node-client.ts)
   * @param options.preconnect fetch only: open the connection now, before the first request
   *   (default true; fetch-client.ts); node:https always connects on the first request
   */
  constructor(
    config: KubeClientConfig,
    options: { timeoutMs?: number; client?: HttpClientKind; preconnect?: boolean } = {},
  ) {
    this.#config = config;
    this.#url = new URL(config.server);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const kind = options.client ?? 'auto';
    const useFetch = kind === 'fetch' || (kind === 'auto' && process.versions.bun !== undefined);
    this.#client = useFetch
      ? fetchClient(config, this.#url, { preconnect: options.preconnect ?? true })
      : nodeClient(config, this.#url);
  }

  /**
   * Sends one request and parses the JSON answer.
   * @param path absolute API path, e.g. "/apis/ipam.blockipam.io/v1alpha1/ippools"
   * @throws NotFoundError (404), AlreadyExistsError (409 AlreadyExists), ConflictError (409),
   *   InvalidError (422, 400 — with the server's message), UnavailableError (no connection,
   *   429 after 5 retries, 5xx) refined as RequestTimeoutError (no complete answer within
   *   timeoutMs) and ProxyError (a proxy refused the tunnel), TlsError (no TLS session; origin
   *   `kubeconfig` or `server`), DecodeError (a 2xx answer that is not JSON), ApiError (any
   *   other status; TlsError and DecodeError refine it). All name the request; socket failures
   *   carry the socket error as `cause`.
   */
  async request<T>(method: Method, path: string, options: RequestOptions = {}): Promise<T> {
    for (let retry = 0; ; retry++) {
      options.signal?.throwIfAborted();
      this.stats.requests += 1;
      this.stats.byMethod[method] = (this.stats.byMethod[method] ?? 0) + 1;
      const { status, text, retryAfter } = await this.#send(
        method,
        this.#pathWithQuery(path, options.query),
        options,
      );
      if (status >= 200 && status < 300) {
        options.onBody?.(text);
        return decode<T>(status, text, `${method} ${path}`);
      }
      if (status !== 429 || retry >= MAX_429_RETRIES) throw errorFor(status, text, `${method} ${path}`);
      const seconds = Number(retryAfter);
      const waitMs = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : DEFAULT_429_WAIT_MS;
      const { signal } = options;
      await sleep(Math.min(waitMs, MAX_429_WAIT_MS), undefined, { signal }).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    }
  }

  /** Closes idle keep-alive connections (lets the process exit). */
  close(): void {
    this.#client.close();
  }

  async #send(method: Method, path: string, options: RequestOptions): Promise<Exchange> {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = {
      Accept: options.accept ?? 'application/json',
      'User-Agent': 'blockipam',
    };
    if (body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
    const token = this.#bearer();
    if (token) headers.Authorization = `Bearer ${token}`;
    const { signal } = options;
    try {
      return await this.#client.send({ method, path, headers, body, timeoutMs: this.#timeoutMs, signal });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw networkError(error as Error & { code?: string }, method, path, this.#timeoutMs);
    }
  }

  #pathWithQuery(path: string, query: RequestOptions['query']): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {}))
      if (value !== undefined && value !== '') params.set(key, value);
    const text = params.toString();
    return `${this.#url.pathname.replace(/\/+$/, '')}${path}${text ? `?${text}` : ''}`;
  }

  /**
   * The bearer token: the static one, else the tokenFile's content (trimmed), re-read when older
   * than TOKEN_FILE_TTL_MS. A re-read that fails keeps the token read before, as client-go's
   * cachingTokenSource does (k8s.io/client-go/transport/token_source.go).
   * @throws KubeconfigError naming tokenFile and its path when the file was never readable
   */
  #bearer(): string | undefined {
    if (this.#config.token) return this.#config.token;
    const file = this.#config.tokenFile;
    if (!file) return undefined;
    const now = Date.now();
    if (!this.#token || now - this.#token.readAt > TOKEN_FILE_TTL_MS) {
      try {
        const value = readFileSync(file, 'utf8').trim();
        // client-go refuses an empty token file ("read empty token from file"); sending no
        // Authorization would only earn a 403 as system:anonymous.
        if (value === '') throw new Error('the file is empty');
        this.#token = { value, readAt: now };
      } catch (error) {
        if (!this.#token)
          throw new KubeconfigError(`cannot read tokenFile ${file}: ${(error as Error).message}`, {
            cause: error,
          });
      }
    }
    return this.#token.value;
  }
}

/**
 * The JSON body of a 2xx answer (undefined when empty).
 * @throws DecodeError naming `what` when the body is not JSON (e.g. a proxy's HTML login page)
 */
function decode<T>(status: number, text: string, what: string): T {
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    const start = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new DecodeError(
      `${what}: HTTP ${status} answer is not JSON (${text.length} bytes, starting "${start}"); a proxy or load balancer in front of the API server?`,
      status,
      { cause: error },
    );
  }
}

/** A Kubernetes Status body, the parts used. */
interface Status {
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string };
}

/** Maps an HTTP failure to a typed error. */
export function errorFor(status: number, text: string, what: string): Error {
  let parsed: Status;
  try {
    parsed = JSON.parse(text) as Status;
  } catch {
    parsed = { message: text.slice(0, 500) };
  }
  const message = parsed.message ?? `${what}: HTTP ${status}`;
  const object = parsed.details?.name ? `${parsed.details.kind ?? 'object'}/${parsed.details.name}` : what;
  if (status === 404) return new NotFoundError(object, message);
  if (status === 409)
    return parsed.reason === 'AlreadyExists'
      ? new AlreadyExistsError(object, message)
      : new ConflictError(object, message);
  if (status === 410) return new ExpiredError(what, `${what}: HTTP 410: ${message}`);
  const reason = parsed.reason ? { reason: parsed.reason } : {};
  if (status === 422 || status === 400) return new InvalidError(message, status, reason);
  if (status === 429 || status >= 500) return new UnavailableError(`${what}: HTTP ${status}: ${message}`);
  return new ApiError(`${what}: HTTP ${status}: ${message}`, status, reason);
}

// A TLS failure, by the socket error's code (Node's and Bun's: OpenSSL verification codes,
// ERR_TLS_*, ERR_SSL_*; ERR_TLS_CREDENTIALS is fetch-client.ts's for our own material) or, where a
// runtime gives no code, by its message.
const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|EPROTO$)/;
const TLS_MESSAGE =
  /certificate|self[- ]signed|altnames|unable to verify|unable to get (local )?issuer|CERT_|ERR_TLS|SSL|TLS/i;

/**
 * Maps a failure without an HTTP answer to its kind: RequestTimeoutError (ETIMEDOUT: the
 * deadline, or the OS's connect timeout), ProxyError (EPROXY, fetch-client.ts), UnavailableError
 * (connection refused/reset, DNS, …), TlsError (origin `kubeconfig` for our own material), else
 * ApiError with status 0. Each carries the socket error as `cause` and names the request.
 */
function networkError(
  error: Error & { code?: string },
  method: string,
  path: string,
  timeoutMs: number,
): Error {
  const code = error.code ?? '';
  const what = `${method} ${path}`;
  const cause = { cause: error };
  if (code === 'ETIMEDOUT')
    return new RequestTimeoutError(`${what}: API server unreachable: ${error.message}`, timeoutMs, cause);
  if (code === 'EPROXY') return new ProxyError(`${what}: API server unreachable: ${error.message}`, cause);
  if (NETWORK_CODES.has(code) || /socket hang up/.test(error.message))
    return new UnavailableError(`${what}: API server unreachable: ${error.message}`, cause);
  if (TLS_CODE.test(code) || TLS_MESSAGE.test(error.message)) {
    const ours = code === 'ERR_TLS_CREDENTIALS' || /^TLS: (the )?kubeconfig/.test(error.message);
    return new TlsError(`${what}: ${error.message}`, ours ? 'kubeconfig' : 'server', cause);
  }
  return new ApiError(`${what}: ${error.message}`, 0, cause);
}

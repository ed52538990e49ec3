/**
 * HTTP exchanges over the runtime's fetch with Bun's per-request `tls` option (CA, client
 * certificate and key, verification): the client KubeTransport uses when it runs under Bun,
 * i.e. in the CNI plugin executable (scripts/build-plugin.ts). Bun's fetch is native code with
 * its own connection pool; its first request, TLS handshake included, takes ~6 ms here against
 * ~20 ms through Bun's node:https layer (docs/design-plugin.md "Runtime"). Node's fetch has no
 * `tls` option, so under Node this client suits plain-HTTP servers only (the transport's
 * tests); KubeTransport never picks it there by itself.
 * Source: bun.sh/docs/api/fetch (TLS options), bun.sh/guides/http/tls.
 */
import type { KubeClientConfig } from './config.ts';
import { tlsMaterialProblem } from './tls-material.ts';
import type { Exchange, HttpClient, Outgoing } from './node-client.ts';

/** The part of Bun's RequestInit that standard typings lack. */
interface BunRequestInit extends RequestInit {
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  /**
   * false: never log this request, whatever BUN_CONFIG_VERBOSE_FETCH says — its `curl` form
   * prints the bearer token unredacted to stderr, which runtimes keep in their logs (tester).
   */
  verbose?: boolean;
}

/**
 * Bun's fetch honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment, as client-go
 * does (Go's http.ProxyFromEnvironment) — a CNI plugin inherits the container runtime's, which
 * often has a proxy for image pulls. Go never proxies `localhost` or a loopback address
 * (golang.org/x/net/http/httpproxy); Bun would, so a loopback API server (k3s/RKE2 agents'
 * local load balancer, kind) is added to NO_PROXY here. Bun reads NO_PROXY per request. Go
 * ignores ALL_PROXY; Bun would use it, so it is removed from this process's environment.
 */
function proxyLikeClientGo(url: URL): void {
  // Go reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY only; Bun also ALL_PROXY.
  delete process.env.ALL_PROXY;
  delete process.env.all_proxy;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!isLoopback(host)) return;
  const current = process.env.NO_PROXY ?? process.env.no_proxy ?? '';
  const entries = current.split(',').map((e) => e.trim());
  if (entries.includes(host)) return;
  process.env.NO_PROXY = process.env.no_proxy = [...entries.filter((e) => e !== ''), host].join(',');
}

/** `localhost`, 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8 (URL writes it ::ffff:7fxx:xxxx). */
function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) ||
    host === '::1' ||
    /^::ffff:(127\.|7f[0-9a-f]{2}:)/i.test(host)
  );
}

/**
 * "may have gone through proxy http://host:port from HTTPS_PROXY" when the environment names a
 * proxy for an https server that is not loopback (NO_PROXY may still exempt it, hence "may"),
 * else undefined. Credentials in the proxy URL are never repeated.
 */
function proxyNoteFor(url: URL): string | undefined {
  if (url.protocol !== 'https:' || isLoopback(url.hostname.replace(/^\[|\]$/g, ''))) return undefined;
  const name = process.env.HTTPS_PROXY !== undefined ? 'HTTPS_PROXY' : 'https_proxy';
  const value = process.env[name];
  if (!value) return undefined;
  let shown: string;
  try {
    const p = new URL(value);
    shown = `${p.protocol}//${p.host}`;
  } catch {
    shown = '(unparsable)';
  }
  return `may have gone through proxy ${shown} from ${name}`;
}

/**
 * Bun's `fetch.preconnect` (bun.sh/docs/api/fetch "Preconnect"): starts the HTTP client and the
 * connection to `origin` now, while the caller still reads stdin and files, so the first request
 * (in the plugin's direct path, the call's first read) does not pay that set-up: 25 → 7 ms for
 * a first request on loopback here, one connection either way. The TLS handshake still uses the
 * request's own options: a wrong CA is refused and the client certificate is presented, checked
 * against a local server. No-op where fetch has no preconnect.
 */
function preconnect(origin: string): void {
  const f = fetch as typeof fetch & { preconnect?: (url: string) => void };
  if (typeof f.preconnect !== 'function') return;
  try {
    f.preconnect(origin);
  } catch {
    // a hint only: the first request connects as it would have
  }
}

/**
 * A client over fetch. Errors keep fetch's `code` (ECONNREFUSED, ECONNRESET, TLS codes).
 * @param options.preconnect start the connection now ({@link preconnect}; default true); false:
 *   the first request opens it
 */
export function fetchClient(
  config: KubeClientConfig,
  url: URL,
  options: { preconnect?: boolean } = {},
): HttpClient {
  proxyLikeClientGo(url);
  const proxyNote = proxyNoteFor(url);
  const tls =
    url.protocol === 'https:'
      ? {
          ...(config.ca ? { ca: config.ca.toString('utf8') } : {}),
          ...(config.cert ? { cert: config.cert.toString('utf8') } : {}),
          ...(config.key ? { key: config.key.toString('utf8') } : {}),
          rejectUnauthorized: !config.insecureSkipTLSVerify,
        }
      : undefined;
  const origin = url.origin;
  if (options.preconnect ?? true) preconnect(origin);
  return {
    async send({ method, path, headers, body, timeoutMs, signal }: Outgoing): Promise<Exchange> {
      const deadline = AbortSignal.timeout(timeoutMs);
      const init: BunRequestInit = {
        method,
        headers,
        signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
        redirect: 'manual',
        verbose: false,
        ...(body === undefined ? {} : { body }),
        ...(tls ? { tls } : {}),
      };
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${origin}${path}`, init);
        text = await res.text();
      } catch (e) {
        // The caller's signal: its reason, whatever it is (it may itself be a TimeoutError).
        if (signal?.aborted) throw signal.reason;
        // AbortSignal.timeout rejects with a TimeoutError DOMException: give it the socket code.
        if (e instanceof Error && e.name === 'TimeoutError')
          throw Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT', cause: e });
        // Bun puts the socket or TLS code on the error itself, Node's fetch on its cause.
        const error = e as Error & { code?: unknown; cause?: { code?: unknown; message?: unknown } };
        const causeCode = error.cause?.code;
        if (typeof error.code !== 'string' && typeof causeCode === 'string') {
          const detail = typeof error.cause?.message === 'string' ? error.cause.message : causeCode;
          throw Object.assign(new Error(`${error.message}: ${detail}`), { code: causeCode, cause: e });
        }
        // Bun's only word for unusable TLS material (loadKubeconfig checks it first; this
        // covers a config built another way).
        if (error.code === 'FailedToOpenSocket' && tls) {
          const problem = tlsMaterialProblem(config, 'the kubeconfig');
          if (problem)
            throw Object.assign(new Error(`TLS: ${problem}`), { code: 'ERR_TLS_CREDENTIALS', cause: e });
        }
        // A proxy from the environment that refuses the tunnel (e.g. 407): unreachable, said so.
        if (/proxy/i.test(error.message))
          throw Object.assign(new Error(`proxy${proxyNote ? ` (${proxyNote})` : ''}: ${error.message}`), {
            code: 'EPROXY',
            cause: e,
          });
        // Any other failure through a proxy: say the proxy was in the way.
        if (proxyNote && typeof error.code === 'string')
          throw Object.assign(new Error(`${error.message} (${proxyNote})`), { code: error.code, cause: e });
        throw e;
      }
      return { status: res.status, text, retryAfter: res.headers.get('retry-after') ?? undefined };
    },
    close() {
      // Bun's pool closes idle connections itself and the plugin exits right after its answer.
    },
  };
}

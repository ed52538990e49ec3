/**
 * The watch half of an informer, honouring the kubeconfig's TLS settings under Bun too.
 *
 * @kubernetes/client-node's `Watch` opens its stream with undici's `fetch` and a `dispatcher`
 * that carries the cluster CA and the client certificate. In the Bun-compiled executable
 * (docs/image.md) `undici` is Bun's own fetch, which ignores `dispatcher`: every watch then
 * failed with "unable to verify the first certificate" (and a client certificate would not be
 * sent), while LISTs — through core's transport — worked. Under Bun this class opens the same
 * request with Bun's `tls` fetch option (bun.sh/docs/api/fetch §TLS) built from the kubeconfig:
 * `ca`, `cert`, `key`, `rejectUnauthorized`. Under Node it is client-node's `Watch` unchanged.
 *
 * Contract (as client-node's `Watch.watch`): `callback(type, object, event)` per event line;
 * `done(err | null)` exactly once when the stream ends, fails or is aborted. A stream that
 * was answered (200) and then carries nothing for `inactivityMs` (30 s, client-node's own)
 * ends with a DOMException named TimeoutError, as client-node's does: its ListWatch then
 * watches again from the last resourceVersion at once — no error, no restart. (A plain Error
 * there went to the informer's error path: every idle watch was restarted every 30 s after a
 * 1 s back-off, with a warning and a restart counted, and `connected` flapped.) No answer at all
 * within `inactivityMs` is a plain Error (code ETIMEDOUT): the error path, so `connected` goes
 * false while the API server does not answer. Both runtimes ask for bookmarks and a server-side
 * timeout ({@link serverTimeoutSeconds}). Under Node client-node's Watch runs the stream (its
 * own timer, set to `inactivityMs`; a connect that times out is a TimeoutError there).
 */
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { HttpMethod, RequestContext, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';

/** True in the Bun runtime (the compiled executable), where undici's `dispatcher` is ignored. */
const runningUnderBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';

/** 30 s: client-node's own watch inactivity timeout, kept so both runtimes behave alike. */
const DEFAULT_INACTIVITY_MS = 30_000;

/**
 * The watch's `timeoutSeconds`: the API server ends the stream itself 5 s before the client's
 * inactivity timeout would (at least 1 s), and its watch cache sends a bookmark 2 s before that
 * end (allowWatchBookmarks), so an idle watch resumes from a resourceVersion that kept up with
 * its kind — not one the watch cache's history has left behind (410, a LIST). Without it the
 * server's own timeout is 30–60 min and an idle stream, ended by the client at 30 s, never
 * gets a bookmark.
 */
function serverTimeoutSeconds(inactivityMs: number): number {
  return Math.max(1, Math.floor(inactivityMs / 1000) - 5);
}

/** Bun's fetch TLS option (bun.sh/docs/api/fetch). */
interface BunTls {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
}

function pem(data: string | undefined, file: string | undefined): string | undefined {
  if (data) return Buffer.from(data, 'base64').toString('utf8');
  if (file) return readFileSync(file, 'utf8');
  return undefined;
}

/** The kubeconfig's TLS material for its current cluster and user, as Bun's fetch wants it. */
function bunTlsOptions(kc: KubeConfig): BunTls {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  return {
    ca: pem(cluster?.caData, cluster?.caFile),
    cert: pem(user?.certData, user?.certFile),
    key: pem(user?.keyData, user?.keyFile),
    rejectUnauthorized: !cluster?.skipTLSVerify,
  };
}

type DoneCallback = (err: unknown) => void;
type EventCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

export class KubeconfigTlsWatch extends Watch {
  private readonly kc: KubeConfig;
  private readonly inactivityMs: number;

  /** @param options.inactivityMs ms without data before the stream ends (default 30 000) */
  constructor(kc: KubeConfig, options: { inactivityMs?: number } = {}) {
    super(kc);
    this.kc = kc;
    this.inactivityMs = options.inactivityMs ?? DEFAULT_INACTIVITY_MS;
    // client-node's own timer (Node), private in its types: the same time under both runtimes.
    (this as unknown as { requestTimeoutMs: number }).requestTimeoutMs = this.inactivityMs;
  }

  override async watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    callback: EventCallback,
    done: DoneCallback,
  ): Promise<AbortController> {
    const inactivityMs = this.inactivityMs;
    const queryParams = {
      allowWatchBookmarks: true,
      timeoutSeconds: serverTimeoutSeconds(inactivityMs),
      ...params,
    };
    if (!runningUnderBun) return super.watch(path, queryParams, callback, done);
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('No currently active cluster');
    const url = new URL(cluster.server + path);
    url.searchParams.set('watch', 'true');
    for (const [key, value] of Object.entries(queryParams ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let finished = false;
    /** Whether the API server answered (200): silence after that is an idle stream. */
    let answered = false;
    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller.abort();
      done(err);
    };
    const resetTimer = (): void => {
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          finish(
            answered
              ? new DOMException(`watch ${path}: no data for ${inactivityMs} ms`, 'TimeoutError')
              : Object.assign(new Error(`watch ${path}: no answer within ${inactivityMs} ms`), {
                  code: 'ETIMEDOUT',
                }),
          ),
        inactivityMs,
      );
      timer.unref();
    };
    try {
      resetTimer();
      const headers = await requestHeaders(this.kc, url.toString());
      const init = { method: 'GET', headers, signal: controller.signal, tls: bunTlsOptions(this.kc) };
      const response = await fetch(url, init);
      if (response.status !== 200 || !response.body) {
        const error = new Error(response.statusText || STATUS_CODES[response.status] || 'watch failed');
        (error as Error & { statusCode?: number }).statusCode = response.status;
        throw error;
      }
      answered = true;
      resetTimer(); // the answer's wait is over: from here on it times inactivity
      void pump(response.body, callback, resetTimer).then(
        () => finish(null),
        (err: unknown) => finish(controller.signal.aborted ? null : err),
      );
    } catch (err) {
      finish(err);
    }
    return controller;
  }
}

/** Headers (bearer token, exec credentials) as client-node's own watch computes them. */
async function requestHeaders(kc: KubeConfig, url: string): Promise<Record<string, string>> {
  const ctx = new RequestContext(url, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return ctx.getHeaders();
}

/** Reads newline-delimited watch events; unparsable lines are skipped (as client-node does). */
async function pump(
  body: ReadableStream<Uint8Array>,
  callback: EventCallback,
  onData: () => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    onData();
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (!line.trim()) continue;
      let event: { type: string; object: unknown };
      try {
        event = JSON.parse(line) as { type: string; object: unknown };
      } catch {
        continue;
      }
      callback(event.type, event.object, event);
    }
  }
}

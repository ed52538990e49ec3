/**
 * A watched, always-current view of one kind: @kubernetes/client-node's ListWatch (an informer:
 * LIST, then WATCH from its resourceVersion, re-LIST on 410 Gone) with what a daemon needs
 * around it:
 * - the LIST goes through core's transport (plain JSON, the same shape the watch events have;
 *   counted in `blockipam_api_requests_total`), in pages of 500 (core's listAll);
 * - an error stops client-node's informer; this one restarts it with exponential backoff
 *   (1 s doubling to 30 s) until {@link WatchedKind.stop}, counting `blockipam_watch_restarts_total`;
 * - `synced` says the first LIST has landed (readiness); `connected` that the last (re)start
 *   reached the watch without an error and none came since (the agent's readiness).
 */
import { ListWatch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { listAll } from 'blockipam/core';
import type { KubeTransport } from 'blockipam/core/kube';
import { errorFields, F } from './log.ts';
import { KubeconfigTlsWatch } from './watch.ts';
import type { Logger } from './log.ts';
import type { DaemonMetrics } from './metrics.ts';

export type WatchEvent = 'add' | 'update' | 'delete';

/** What the cache needs of an object (core's resource types, whose timestamps are strings). */
export interface WatchableObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
}

export interface WatchOptions<T> {
  /** Short name for logs and metrics, e.g. "ipamblocks". */
  resource: string;
  /** Collection path, e.g. "/apis/ipam.blockipam.io/v1alpha1/ipamblocks" or "/api/v1/pods". */
  path: string;
  /** Label selector in query form ("a=b,c"), as the API takes it. */
  labelSelector?: string;
  /** Field selector in query form ("spec.nodeName=n1"). */
  fieldSelector?: string;
  kubeConfig: KubeConfig;
  transport: KubeTransport;
  log: Logger;
  metrics?: DaemonMetrics;
  /** Called after the cache changed (the object is the new one; for delete the last one seen). */
  onEvent?: (event: WatchEvent, object: T) => void;
  /**
   * ms a watch stream may carry nothing before it is ended and resumed from the last
   * resourceVersion (watch.ts; Bun only, Node's client-node keeps its own 30 s). Default 30 000.
   */
  watchInactivityMs?: number;
  /** Objects per LIST page (core's listAll). Default 500 (DEFAULT_PAGE_SIZE). */
  listPageSize?: number;
}

export interface WatchedKind<T> {
  /** Objects currently known (empty before the first LIST). */
  list(): readonly T[];
  get(name: string, namespace?: string): T | undefined;
  /** True once a LIST has been applied. */
  readonly synced: boolean;
  /** False between an error and the next successful reconnect. */
  readonly connected: boolean;
  /** Stops the watch; no restart afterwards. Idempotent. */
  stop(): Promise<void>;
}

// 1 s, doubling to 30 s: client-node's own reconnect delays (cache.ts), so a restart after an
// error paces like its reconnects do.
const RESTART_BASE_MS = 1_000;
const RESTART_CAP_MS = 30_000;

/** Starts watching; resolves once the first LIST landed or failed (failure → restarts follow). */
export async function watchKind<T extends WatchableObject>(
  options: WatchOptions<T>,
): Promise<WatchedKind<T>> {
  let synced = false;
  let connected = false;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  // client-node types its objects with Date timestamps; the JSON (LIST and watch alike) has strings.
  type Raw = KubernetesObject;
  // Paged (core's listAll: 500 per page, one page ahead, started over once on 410 Expired), as
  // client-go's reflector lists: a kind of 20,000 objects is not one answer of tens of MB.
  type RawList = { items: Raw[]; metadata?: { resourceVersion?: string; continue?: string } };
  const listFn = async (): Promise<KubernetesListObject<Raw>> => {
    const { items, resourceVersion } = await listAll<Raw>(
      async ({ limit, continue: token }) => {
        const query = {
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          limit: String(limit),
          continue: token,
        };
        const page = await options.transport.request<RawList>('GET', options.path, { query });
        const next = page.metadata?.continue;
        return {
          items: page.items,
          resourceVersion: page.metadata?.resourceVersion ?? '',
          ...(next ? { continue: next } : {}),
        };
      },
      options.listPageSize === undefined ? {} : { limit: options.listPageSize },
    );
    synced = true;
    return { items, metadata: { resourceVersion } };
  };
  const informer = new ListWatch<Raw>(
    options.path,
    new KubeconfigTlsWatch(
      options.kubeConfig,
      options.watchInactivityMs === undefined ? {} : { inactivityMs: options.watchInactivityMs },
    ),
    listFn,
    false,
    options.labelSelector,
    options.fieldSelector,
  );
  for (const event of ['add', 'update', 'delete'] as const)
    informer.on(event, (object: Raw) => {
      connected = true;
      options.onEvent?.(event, object as unknown as T);
    });
  let errors = 0;
  /** Starts (or restarts) the informer; connected once it returns without a new error. */
  const start = async (): Promise<void> => {
    const before = errors;
    await informer.start();
    if (errors === before && !stopped) {
      connected = true;
      failures = 0;
    }
  };
  informer.on('error', (error: unknown) => {
    errors += 1;
    connected = false;
    if (stopped) return;
    const delayMs = Math.min(RESTART_CAP_MS, RESTART_BASE_MS * 2 ** Math.min(failures, 5));
    failures += 1;
    options.metrics?.watchRestarts.inc({ resource: options.resource });
    options.log.warn('watch failed; restarting', {
      [F.resource]: options.resource,
      [F.durationMs]: delayMs,
      ...errorFields(error),
    });
    timer = setTimeout(() => void start(), delayMs);
  });
  await start();
  return {
    list: () => informer.list() as unknown as readonly T[],
    get: (name, namespace) => informer.get(name, namespace) as unknown as T | undefined,
    get synced() {
      return synced;
    },
    get connected() {
      return connected;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}

/**
 * The controller process, wired (main.ts parses the flags): one connection, the registry and
 * HTTP endpoints, the elector, and — while leading — the watches and the pass loop. Shutdown
 * (SIGTERM): the pass in flight finishes, the watches stop, the lease is released, exit 0.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  connectKube,
  createLogger,
  createMetrics,
  errorFields,
  Lifecycle,
  observeTransport,
  failingChecks,
  startHttpServer,
} from '../shared/index.ts';
import type { KubeConnectionOptions, LogLevel } from '../shared/index.ts';
import { kubeClaimPoolsSink } from './admission/claim-pools.ts';
import { kubeEventSink } from './events.ts';
import { LeaderElector } from './leader/elector.ts';
import type { ElectorEvent } from './leader/elector.ts';
import { kubeLeaseStore } from './leader/lease-store.ts';
import { controllerMetrics, observeControllerReady } from './metrics.ts';
import { PassScheduler, Reconciler } from './reconciler.ts';
import { watchCluster } from './watched-view.ts';
import type { WatchedView } from './watched-view.ts';

export interface ControllerOptions extends KubeConnectionOptions {
  /** Unique per replica; default `<pod or host name>-<6 hex>`. */
  identity?: string;
  leaseNamespace: string;
  leaseName: string;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
  metricsPort: number;
  metricsHost: string;
  resyncSeconds: number;
  debounceMs: number;
  /** A deleted node's quarantine, seconds (gc/gone-nodes.ts); default the Reconciler's. */
  nodeGoneGraceSeconds?: number;
  eventsNamespace: string;
  /** The admission policy's ConfigMap of claimable pools; absent = not published. */
  claimPoolsConfigMap?: { namespace: string; name: string };
  logLevel: LogLevel;
}

/** Runs until SIGTERM / SIGINT (then exits). */
export async function runController(options: ControllerOptions): Promise<void> {
  const log = createLogger({ component: 'controller', level: options.logLevel });
  const identity =
    options.identity ?? `${process.env.POD_NAME ?? hostname()}-${randomBytes(3).toString('hex')}`;
  const connection = connectKube(options);
  const shared = createMetrics('controller');
  observeTransport(shared.registry, connection.transport);
  const metrics = controllerMetrics(shared.registry);
  const lifecycle = new Lifecycle(log);
  lifecycle.onStop('connection', () => connection.close());
  let view: WatchedView | undefined;
  let lastPassMs = Date.now();
  const elector = new LeaderElector({
    store: kubeLeaseStore(connection.transport, options.leaseNamespace, options.leaseName),
    identity,
    leaseDurationMs: options.leaseDurationSeconds * 1000,
    renewDeadlineMs: options.renewDeadlineSeconds * 1000,
    retryPeriodMs: options.retryPeriodSeconds * 1000,
    onEvent: (event) => onElectorEvent(event),
  });
  // A standby is ready; the leader once its watches synced and while none fails.
  const ready = {
    // view is set once every watch has listed: a leader still listing is not ready yet
    watches: () => (elector.isLeader ? (view ? view.notReady() : 'watches not listed yet') : undefined),
  };
  // blockipam_controller_ready: what /readyz answers, through the same function
  observeControllerReady(shared.registry, () => failingChecks(ready));
  const server = await startHttpServer({
    port: options.metricsPort,
    host: options.metricsHost,
    registry: shared.registry,
    live: {
      // A leader whose passes stopped (a hung request) is restarted by the kubelet.
      passes: () =>
        elector.isLeader && Date.now() - lastPassMs > 3 * options.resyncSeconds * 1000 + 60_000
          ? `no pass for ${Math.round((Date.now() - lastPassMs) / 1000)} s`
          : undefined,
    },
    ready,
  });
  lifecycle.onStop('http server', () => server.close());
  log.info('controller started', {
    identity,
    port: server.port,
    lease: `${options.leaseNamespace}/${options.leaseName}`,
  });

  const onApiError = (operation: string, error: unknown): void => {
    shared.apiErrors.inc({ operation, reason: error instanceof Error ? error.name : typeof error });
  };
  function onElectorEvent(event: ElectorEvent): void {
    if (event.type === 'acquired') {
      metrics.leader.set(1);
      log.info('became leader', { identity, transitions: event.transitions });
    } else if (event.type === 'lost' || event.type === 'released') {
      metrics.leader.set(0);
      log.info(event.type === 'lost' ? 'leadership lost' : 'lease released', {
        identity,
        ...(event.type === 'lost' ? { reason: event.reason } : {}),
      });
    } else if (event.type === 'try-failed') {
      onApiError('leader-election', event.error);
      log.warn('lease request failed', errorFields(event.error));
    }
  }

  const lead = async (leading: AbortSignal, deposed: AbortSignal): Promise<void> => {
    lastPassMs = Date.now();
    const scheduler = new PassScheduler(() => pass(), {
      debounceMs: options.debounceMs,
      resyncMs: options.resyncSeconds * 1000,
    });
    view = await watchCluster({ connection, log, metrics: shared, onChange: () => scheduler.trigger() });
    const reconciler = new Reconciler({
      ds: connection.datastore,
      blockStatus: (block, callOptions) => connection.datastore.blocks.updateStatus(block, callOptions),
      ipamNodes: connection.datastore.ipamNodes,
      view,
      log,
      metrics,
      events: kubeEventSink(connection.transport, { namespace: options.eventsNamespace, instance: identity }),
      ...(options.claimPoolsConfigMap
        ? { claimPools: kubeClaimPoolsSink(connection.transport, options.claimPoolsConfigMap) }
        : {}),
      ...(options.nodeGoneGraceSeconds === undefined
        ? {}
        : { nodeGoneGraceSeconds: options.nodeGoneGraceSeconds }),
      onApiError,
    });
    let conflicts = 0;
    const mayWrite = (): boolean => elector.isLeader && !leading.aborted;
    async function pass(): Promise<void> {
      // `deposed`: a leader that lost the lease sends nothing more (not even the request a
      // core retry would send next); a shutdown (only `leading`) lets the write in flight finish.
      const done = await lifecycle.track(reconciler.pass({ mayWrite, signal: deposed }));
      lastPassMs = Date.now();
      shared.conflicts.inc({ operation: 'reconcile' }, reconciler.stats.conflicts - conflicts);
      conflicts = reconciler.stats.conflicts;
      const released = done.leaks?.reclaim.released.length ?? 0;
      if (done.skipped) log.info('pass skipped', { reason: done.skipped });
      else if (released > 0 || (done.nodes?.nodes.length ?? 0) > 0)
        log.info('pass done', { released, nodes: done.nodes?.nodes, candidates: reconciler.candidates.size });
    }
    try {
      await scheduler.loop(leading, (error) => {
        metrics.passes.inc({ outcome: 'failed' });
        log.warn('pass failed', errorFields(error));
      });
    } finally {
      await view.stop();
      view = undefined;
    }
  };
  const election = elector.run(lifecycle.signal, lead);
  lifecycle.onStop('leader election', () => election);
  lifecycle.handleSignals();
  await election;
}

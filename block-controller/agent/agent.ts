/**
 * The node agent (docs/design-agent.md): wires the watched state to its loops — the IPAM server
 * (ipam/), pre-claim and idle-block release (upkeep/), routes (routes/), pod egress masquerade
 * (masquerade/), install mode (install/) —
 * behind /metrics, /healthz, /readyz, with JSON logs and a graceful SIGTERM.
 */
import {
  connectKube,
  createLogger,
  errorFields,
  F,
  Lifecycle,
  observeTransport,
  failingChecks,
  startHttpServer,
} from '../shared/index.ts';
import type { Logger } from '../shared/index.ts';
import { deletionQueueDirOf } from 'blockipam/core/cni';
import { HostLocalAdoption } from './adopt/host-local.ts';
import { CniInstaller } from './install/installer.ts';
import type { SignalFollower } from './install/owner.ts';
import type { InstallOptions } from './install/installer.ts';
import { followOwner } from './install/owner.ts';
import { createAgentMetrics, observeAgentReady, setRouteSkips } from './metrics.ts';
import type { AgentMetrics } from './metrics.ts';
import type { AgentOptions } from './options.ts';
import { createNodeBlocksView, followWatch, startAgentIpam } from './ipam/index.ts';
import { MasqueradeProgrammer, NftTable, removeMasquerade } from './masquerade/index.ts';
import { IpRouteTable, RouteProgrammer, skipCounts } from './routes/index.ts';
import type { RouteProgrammerOptions } from './routes/index.ts';
import { AgentState } from './state.ts';
import type { Kind } from './state.ts';
import { Upkeep } from './upkeep/runner.ts';

// 10 s: install mode retries while the API server is unreachable at start-up.
const INSTALL_RETRY_MS = 10_000;

/** Runs the agent until SIGTERM/SIGINT (then the process exits through the lifecycle). */
export async function runAgent(options: AgentOptions): Promise<void> {
  const log = createLogger({ component: 'agent', level: options.logLevel });
  const metrics = createAgentMetrics();
  const lifecycle = new Lifecycle(log);
  lifecycle.handleSignals();
  const connection = connectKube(options);
  lifecycle.onStop('connection', () => connection.close());
  observeTransport(metrics.registry, connection.transport);
  const started: { state?: AgentState } = {};
  let installed = !options.installCni;
  const ready = {
    // Not ready until every watch has listed, and while any is broken (API server unreachable):
    // the agent's view of its node's blocks, pools and pods is ageing then.
    watches: () => {
      const state = started.state;
      if (!state?.synced) return `not synced: ${(state?.unsynced ?? ['all']).join(', ')}`;
      return state.connected ? undefined : `watch failing: ${state.disconnected.join(', ')}`;
    },
    install: () => (installed ? undefined : 'CNI plugin not installed yet'),
  };
  // blockipam_agent_ready{node}: what /readyz answers, through the same function
  observeAgentReady(metrics, options.nodeName, () => failingChecks(ready));
  const server = await startHttpServer({
    port: options.metricsPort,
    host: options.metricsHost,
    registry: metrics.registry,
    ready,
  });
  lifecycle.onStop('http', () => server.close());
  log.info('agent starting', { [F.node]: options.nodeName, port: server.port, server: connection.server });
  // The IPAM service's and upkeep's view of the node's blocks: each sees the other's writes.
  const view = createNodeBlocksView({
    node: options.nodeName,
    ds: connection.datastore,
    state: () => started.state,
  });
  // Before the watches: a request before the first sync is answered "not ready", not refused.
  if (options.ipamSocket !== '')
    await startAgentIpam({
      path: options.ipamSocket,
      node: options.nodeName,
      ds: connection.datastore,
      view,
      state: () => started.state,
      log,
      metrics,
      lifecycle,
      deletionQueueDir: deletionQueueDirOf(options.ipamSocket),
    });
  const state = await AgentState.start({ node: options.nodeName, connection, log, metrics });
  started.state = state;
  followWatch(view, state);
  const watched = state;
  lifecycle.onStop('watches', () => watched.stop());
  const upkeep = new Upkeep({
    state,
    view,
    log,
    metrics,
    lifecycle,
    tickMs: options.upkeepSeconds * 1000,
  });
  lifecycle.onStop('upkeep', () => upkeep.stop());
  if (options.routes) {
    const routes = new RouteProgrammer({
      nodeName: options.nodeName,
      table: new IpRouteTable({ command: options.ipCommand }),
      log,
      onPass: (outcome) => {
        metrics.routePasses.inc({ node: options.nodeName, status: outcome.status });
        if (outcome.status === 'done') setRouteSkips(metrics, options.nodeName, skipCounts(outcome.skipped));
        log.debug('route pass', { [F.node]: options.nodeName, ...routeFields(outcome) });
      },
    });
    handOver(
      { watched, lifecycle, name: 'routes', kinds: ['blocks', 'node', 'ipamnodes', 'pools'] },
      {
        update: (synced) =>
          routes.update({
            synced,
            ipamNodes: watched.ipamNodes(),
            node: watched.nodeObject(),
            blocks: watched.nodeBlocks(),
            pools: watched.pools(),
          }),
        stop: () => routes.stop(),
      },
    );
  }
  const masquerade =
    options.masquerade === undefined
      ? undefined
      : startMasquerade(options, watched, { log, metrics, lifecycle });
  if (options.installCni) {
    const installer = new CniInstaller(installOptions(options, connection), {
      transport: connection.transport,
      log,
      metrics,
      node: options.nodeName,
    });
    state.onChange((kind) => {
      if (kind === 'node') installer.nodeSeen(state.nodeObject()?.metadata.uid);
    });
    void installUntilDone(installer, lifecycle, log).then(() => (installed = true));
    if (options.hostLocalStore !== undefined) {
      const adoption = new HostLocalAdoption({
        state,
        view,
        store: options.hostLocalStore,
        network: options.networkName,
        graceMs: options.hostLocalGraceSeconds * 1000,
        optIn: (optedIn) => installer.adoption(optedIn),
        log,
        metrics,
        lifecycle,
      });
      lifecycle.onStop('adoption', () => adoption.stop());
      adoption.kick();
    }
    await followOwner(
      options.ownerDaemonSet === undefined
        ? undefined
        : { name: options.ownerDaemonSet, namespace: options.namespace ?? '' },
      {
        installer,
        reinstall: () => installUntilDone(installer, lifecycle, log),
        pluginKubeconfig: options.pluginKubeconfig,
        nodeUid: () => state.nodeObject()?.metadata.uid,
        ...(masquerade ? { followers: [masquerade] } : {}),
        connection,
        log,
        metrics,
        lifecycle,
      },
    );
  }
  upkeep.kick();
}

/**
 * `--masquerade`: the loop that keeps the rule, fed with the pools; `--masquerade=false`: the
 * agent's table removed once (a failure is logged; the agent runs on).
 * @returns with `--masquerade`, what the uninstall signal removes (the table: the loop stopped,
 *   then the table deleted) and the DaemonSet's return puts back (the loop resumed)
 */
function startMasquerade(
  options: AgentOptions,
  watched: AgentState,
  deps: { log: Logger; metrics: AgentMetrics; lifecycle: Lifecycle },
): SignalFollower | undefined {
  const { log, metrics, lifecycle } = deps;
  const table = new NftTable({ command: options.nftCommand });
  const node = options.nodeName;
  if (!options.masquerade) {
    void removeMasquerade(table).then(
      () => log.info('masquerade off: the table is gone', { [F.node]: node, table: table.table }),
      (error: unknown) => log.warn('masquerade off: removing the table failed', errorFields(error)),
    );
    return undefined;
  }
  const masq = new MasqueradeProgrammer({
    table,
    nonMasquerade: options.nonMasqueradeCidrs,
    log,
    onPass: (outcome, ms) => {
      const why = outcome.status === 'written' ? (outcome.why ?? '') : '';
      metrics.masqueradePasses.inc({ node, status: outcome.status, why });
      log.debug('masquerade pass', { [F.node]: node, [F.durationMs]: Math.round(ms), ...outcome });
    },
  });
  const update = handOver(
    { watched, lifecycle, name: 'masquerade', kinds: ['pools'] },
    { update: (synced) => masq.update({ synced, pools: watched.pools() }), stop: () => masq.stop() },
  );
  return {
    what: 'masquerade table',
    uninstall: async () => {
      await masq.uninstall();
      log.info('masquerade table removed', { [F.node]: node, table: table.table });
    },
    reinstall: () => {
      masq.resume();
      update();
      return Promise.resolve();
    },
  };
}

/**
 * Hands `programmer` the watched view now, on each change of one of `kinds`, and once when the
 * watches sync: its repair pass reuses the last view, and after a start during an API outage the
 * last watch to sync may bring no event of those kinds (else it would wait forever). On stop, the
 * sync check ends, then `programmer.stop`.
 * @returns a function that hands the view again
 */
function handOver(
  w: { watched: AgentState; lifecycle: Lifecycle; name: string; kinds: readonly Kind[] },
  programmer: { update: (synced: boolean) => void; stop: () => Promise<void> },
): () => void {
  let handedSynced = false;
  const update = (): void => {
    handedSynced = w.watched.synced;
    programmer.update(handedSynced);
  };
  w.watched.onChange((kind) => {
    if (w.kinds.includes(kind)) update();
  });
  update();
  // 1 s: how late a synced view reaches the programmer when no event follows the sync
  const syncCheck = setInterval(() => {
    if (!handedSynced && w.watched.synced) update();
  }, 1_000);
  w.lifecycle.onStop(w.name, () => {
    clearInterval(syncCheck);
    return programmer.stop();
  });
  return update;
}

/** Install mode once (the `install` command): exits non-zero on failure. */
export async function runInstall(options: AgentOptions): Promise<void> {
  const log = createLogger({ component: 'agent', level: options.logLevel });
  const connection = connectKube(options);
  try {
    await new CniInstaller(installOptions(options, connection), {
      transport: connection.transport,
      log,
      metrics: createAgentMetrics(),
      node: options.nodeName,
    }).install();
  } finally {
    connection.close();
  }
}

async function installUntilDone(installer: CniInstaller, lifecycle: Lifecycle, log: Logger): Promise<void> {
  while (!lifecycle.stopping) {
    try {
      await lifecycle.track(installer.install());
      installer.start();
      return;
    } catch (error) {
      log.error('install failed; retrying', { [F.durationMs]: INSTALL_RETRY_MS, ...errorFields(error) });
      await new Promise((resolve) => setTimeout(resolve, INSTALL_RETRY_MS));
    }
  }
}

function installOptions(options: AgentOptions, connection: ReturnType<typeof connectKube>): InstallOptions {
  const config = connection.clientConfig;
  return {
    cniBinDir: options.cniBinDir,
    pluginBinary: options.pluginBinary,
    forwarderBinary: options.pluginBinary && options.forwarderBinary,
    cniConfDir: options.cniConfDir,
    conflistName: options.conflistName,
    conflist: {
      networkName: options.networkName,
      cniVersion: options.cniVersion,
      mtu: options.mtu,
      portmap: options.portmap,
      nodeName: options.nodeName,
      assignIPv4: options.assignIpv4,
      assignIPv6: options.assignIpv6,
      ...(options.ipamSocket !== '' ? { agentSocket: options.ipamSocket } : {}),
      plugin: options.plugin,
      ...(options.hostLocalStore !== undefined ? { hostLocalStore: options.hostLocalStore } : {}),
    },
    kubeconfigPath: options.pluginKubeconfig,
    pluginServer: options.pluginApiServer ?? connection.server,
    ca: config.ca,
    insecureSkipTLSVerify: config.insecureSkipTLSVerify,
    token: {
      namespace: options.namespace ?? '',
      serviceAccount: options.serviceAccount ?? '',
      audiences: options.tokenAudiences,
      expirationSeconds: options.tokenExpirationSeconds,
      node: options.nodeName,
    },
    tokenRefreshMs:
      options.tokenRefreshSeconds === undefined ? undefined : options.tokenRefreshSeconds * 1000,
  };
}

/** A route pass's outcome as log fields (counts; the failed changes' destinations). */
function routeFields(
  outcome: Parameters<NonNullable<RouteProgrammerOptions['onPass']>>[0],
): Record<string, unknown> {
  if (outcome.status !== 'done') return { ...outcome };
  return {
    ...outcome,
    failed: outcome.failed.map((f) => f.change.route.dst),
    skipped: outcome.skipped.length,
  };
}

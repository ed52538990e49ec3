/**
 * The agent's IPAM server, wired (docs/design-agent.md §IPAM server): the socket server
 * (server.ts) answering with core's node IPAM service over the batching datastore over the view
 * of the node's blocks (service.ts, view-datastore.ts; DEL and CHECK the view may answer only in part confirm through its `direct`
 * side), with inputs from the watches (inputs.ts) and STATUS falling back to the last known state
 * (status.ts). The view is made before the watches start and shared with upkeep (its claims and
 * releases are laid over it like the service's writes). Readiness is per command
 * ({@link COMMAND_NEEDS}): a call whose watches have not all listed yet, and every call not yet
 * READY once the agent is stopping, is answered NOT_SERVED and its client takes the direct path; a
 * call READY before the stop is served when its GO comes (its client no longer falls back).
 */
import type { BatchingDatastore, Datastore, IPAMBlock } from 'blockipam/core';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { F } from '../../shared/index.ts';
import type { Lifecycle, Logger } from '../../shared/index.ts';
import { observeBatching, observeConfirmLists } from '../metrics.ts';
import type { AgentMetrics } from '../metrics.ts';
import type { AgentState, Kind } from '../state.ts';
import { agentInputs } from './inputs.ts';
import { startDeletionReplay } from './deletion-replay.ts';
import { startIpamServer } from './server.ts';
import { agentNodeIpam } from './service.ts';
import type { AgentService } from './service.ts';
import type { IpamServer } from './server.ts';
import { withLastKnownStatus } from './status.ts';
import { createViewDatastore, lastKnownDatastore } from './view-datastore.ts';
import type { ViewDatastore } from './view-datastore.ts';

// 15 s: requests in flight at SIGTERM may finish (a warm ADD takes milliseconds; a claim under
// load seconds), within the lifecycle's 20 s before the kubelet's SIGKILL at 30 s.
const DRAIN_MS = 15_000;

/**
 * The watches each command is served from. A DEL, CHECK or GC reads the node's blocks alone
 * (the view; what it lacks is confirmed at the API server); an ADD and STATUS also choose pools,
 * so they need the pools, the IPAMConfig and the reservations. The node, its pods and the
 * namespaces are read from the API server while their watch lacks them (inputs.ts), and the
 * IPAMNodes watch serves routes only: no command waits for those.
 */
const COMMAND_NEEDS: Readonly<Record<string, readonly Kind[]>> = {
  ADD: ['blocks', 'pools', 'configs', 'reservations'],
  STATUS: ['blocks', 'pools', 'configs', 'reservations'],
  DEL: ['blocks'],
  CHECK: ['blocks'],
  GC: ['blocks'],
};

/**
 * Why `command` cannot be served from `state` now (its watches not listed yet), or undefined.
 * A command not in {@link COMMAND_NEEDS} (VERSION, a typo) needs nothing: the dispatcher answers it.
 */
function commandProblem(command: string, state: AgentState | undefined): string | undefined {
  const needs = COMMAND_NEEDS[command] ?? [];
  if (needs.length === 0) return undefined;
  if (state === undefined) return 'the agent has not started its watches';
  const unsynced = state.unsynced.filter((kind) => needs.includes(kind));
  return unsynced.length === 0 ? undefined : `not synced yet: ${unsynced.join(', ')}`;
}

export interface AgentIpamOptions {
  readonly path: string;
  readonly node: string;
  /** The agent's datastore (KubeDatastore): the inputs' misses go there. */
  readonly ds: Datastore;
  /** The view of the node's blocks over `ds` (createNodeBlocksView): the blocks go there. */
  readonly view: ViewDatastore;
  /** The watched state once started (undefined before: requests are `notReady`). */
  readonly state: () => AgentState | undefined;
  readonly log: Logger;
  readonly metrics: AgentMetrics;
  readonly lifecycle: Lifecycle;
  /**
   * The plugin's deletion queue on this host (core/cni deletionQueueDirOf of the socket): replayed through
   * the service once DEL is served (deletion-replay.ts). Absent: no replay.
   */
  readonly deletionQueueDir?: string;
}

/**
 * Starts serving; on shutdown stops accepting at once (the plugin then takes its direct path),
 * lets requests in flight finish (at most 15 s) and removes the socket.
 * @throws Error naming the path when the socket's directory or a file at the path is unusable
 */
export async function startAgentIpam(options: AgentIpamOptions): Promise<IpamServer> {
  const { node, log, lifecycle } = options;
  let ipam: NodeIpam | undefined;
  let batching: BatchingDatastore | undefined;
  observeBatching(options.metrics, node, () => batching?.stats());
  observeConfirmLists(options.metrics, node, () => options.view.stats.confirmLists);
  // asked only for a call whose client sent GO: served even once the agent is stopping (the
  // client is committed); `serves` below refuses calls not yet READY
  const service = (): NodeIpam | string => {
    const state = options.state();
    if (state === undefined) return 'the agent has not started its watches';
    if (ipam) return ipam;
    const made = serviceFor(state, options);
    batching = made.batching;
    return (ipam = made.ipam);
  };
  const server = await startIpamServer({
    path: options.path,
    node,
    log,
    metrics: options.metrics,
    serves: (command) =>
      lifecycle.stopping ? 'the agent is stopping' : commandProblem(command, options.state()),
    ipam: () => service(),
  });
  if (options.deletionQueueDir !== undefined)
    startDeletionReplay({
      dir: options.deletionQueueDir,
      node,
      // as a forwarded DEL: only once the node's blocks have listed
      ipam: () => commandProblem('DEL', options.state()) ?? service(),
      log,
      metrics: options.metrics,
      lifecycle,
    });
  const close = (): Promise<void> => server.close(DRAIN_MS);
  lifecycle.signal.addEventListener('abort', () => void close().catch(() => undefined), { once: true });
  lifecycle.onStop('ipam server', close);
  return server;
}

/**
 * The view of the node's blocks over `ds` (view-datastore.ts), fed by the agent's watch once
 * `state()` gives it: empty and not current before (a LIST of the node's blocks reads `ds`).
 * Call {@link followWatch} once the state exists.
 */
export function createNodeBlocksView(options: {
  readonly node: string;
  readonly ds: Datastore;
  readonly state: () => AgentState | undefined;
}): ViewDatastore {
  return createViewDatastore({
    inner: options.ds,
    node: options.node,
    watched: () => options.state()?.nodeBlocks() ?? [],
    current: () => options.state()?.nodeBlocksCurrent ?? false,
  });
}

/** Tells `view` of every block event of `state`'s watch (drops the overlays it caught up with). */
export function followWatch(view: ViewDatastore, state: AgentState): void {
  state.onChange((kind, _event, object) => {
    if (kind === 'blocks') view.observe(object as IPAMBlock);
  });
}

/** The node IPAM service over the view, the batching datastore and the watched inputs. */
function serviceFor(state: AgentState, options: AgentIpamOptions): AgentService {
  const { node, log, view } = options;
  const inputs = agentInputs({ state, ds: options.ds });
  const { ipam, batching } = agentNodeIpam({ node, view, authority: view.direct, inputs, log });
  log.info('IPAM service ready', { [F.node]: node });
  const lastKnown = lastKnownDatastore(view, node);
  return { ipam: withLastKnownStatus({ ipam, lastKnown, inputs, log }), batching };
}

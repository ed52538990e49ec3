/**
 * The route part of a node agent, as a process the e2e tests start inside a node namespace
 * (`ip netns exec <node> node route-agent.ts <kubeconfig> <nodeName> <resyncMs>`): the daemons'
 * shared watches (block-controller/shared: connectKube + watchKind) on IPAMBlocks and Nodes feed
 * block-controller/agent/routes' RouteProgrammer, which programs the node namespace's routes
 * with `ip`. `synced` is true once both watches' first LIST landed. One JSON line per pass on
 * stdout (`{"status":"waiting"|"done"|"error", ...}`); logs on stderr.
 * A stand-in until the node agent (block-controller/agent/) runs the same RouteProgrammer.
 */
import { API_GROUP, type IPAMBlock } from 'blockipam/core';
import {
  IpRouteTable,
  RouteProgrammer,
  type RouteNode,
} from '../../../block-controller/agent/routes/index.ts';
import {
  connectKube,
  createLogger,
  watchKind,
  type WatchedKind,
} from '../../../block-controller/shared/index.ts';

const [kubeconfig, nodeName, resync] = process.argv.slice(2);
if (!kubeconfig || !nodeName) throw new Error('usage: route-agent.ts <kubeconfig> <nodeName> [resyncMs]');

const log = createLogger({ component: 'route-agent', level: 'warn', stream: process.stderr });
const kube = connectKube({ kubeconfig });
const routes = new RouteProgrammer({
  nodeName,
  table: new IpRouteTable(),
  debounceMs: 50,
  resyncMs: Number(resync ?? 1000),
  log,
  onPass: (o) => process.stdout.write(JSON.stringify(o) + '\n'),
});

const watch = <T extends { metadata: { name: string } }>(
  resource: string,
  path: string,
): Promise<WatchedKind<T>> =>
  watchKind<T>({
    resource,
    path,
    kubeConfig: kube.kubeConfig,
    transport: kube.transport,
    log,
    onEvent: () => push(),
  });
/** Filled once both watches started; events during their first LIST find it empty (not synced). */
const kinds: { blocks?: WatchedKind<IPAMBlock>; nodes?: WatchedKind<RouteNode> } = {};

function push(): void {
  routes.update({
    synced: (kinds.blocks?.synced ?? false) && (kinds.nodes?.synced ?? false),
    blocks: kinds.blocks?.list() ?? [],
    nodes: kinds.nodes?.list() ?? [],
  });
}

process.on('SIGTERM', () => {
  void Promise.all([kinds.blocks?.stop(), kinds.nodes?.stop(), routes.stop()]).then(() => process.exit(0));
});
[kinds.blocks, kinds.nodes] = await Promise.all([
  watch<IPAMBlock>('ipamblocks', `/apis/${API_GROUP}/v1alpha1/ipamblocks`),
  watch<RouteNode>('nodes', '/api/v1/nodes'),
]);
push();
// A first LIST that failed lands later (watchKind restarts it) with no event when the kind is
// empty: look again each resync period until both are synced.
const poll = setInterval(
  () => {
    push();
    if (kinds.blocks?.synced && kinds.nodes?.synced) clearInterval(poll);
  },
  Number(resync ?? 1000),
);

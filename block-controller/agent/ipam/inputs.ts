/**
 * The IPAM service's inputs (core's NodeInputs) served from the agent's watches: the pool
 * snapshot (made once per change of pools, reservations or IPAMConfig), this node's labels, the
 * node's pods and the namespaces. A pod not (yet) in the watch is read from the API server (a
 * pod's ADD can come before its watch event); so is any other node's labels, and a pod whose
 * watched UID is not the runtime's (podFromServer: core's pod context asks for it).
 */
import { snapshotOf, withSignal } from 'blockipam/core';
import type { Datastore, PoolSnapshot } from 'blockipam/core';
import type { NodeInputs } from 'blockipam/core/node-ipam';
import type { AgentState } from '../state.ts';

export interface AgentInputsOptions {
  readonly state: AgentState;
  /** Where misses are read (the agent's KubeDatastore). */
  readonly ds: Datastore;
  /** ms since epoch, stamped on snapshots; default Date.now. */
  readonly clock?: () => number;
}

/** NodeInputs over the agent's watches. */
export function agentInputs(options: AgentInputsOptions): NodeInputs {
  const { state, ds } = options;
  const clock = options.clock ?? Date.now;
  let snapshot: PoolSnapshot | undefined;
  state.onChange((kind) => {
    if (kind === 'pools' || kind === 'configs' || kind === 'reservations') snapshot = undefined;
  });
  return {
    snapshot: () =>
      (snapshot ??= snapshotOf(
        { config: state.config(), pools: state.pools(), reservations: state.reservations() },
        clock(),
      )),
    async nodeLabels(node, signal) {
      const own = node === state.node ? state.nodeObject() : undefined;
      if (own) return own.metadata.labels ?? {};
      return (await withSignal(ds, signal).getNode(node))?.metadata.labels ?? {};
    },
    pod: (namespace, name, signal) =>
      state.pod(namespace, name) ?? withSignal(ds, signal).getPod(namespace, name),
    podFromServer: (namespace, name, signal) => withSignal(ds, signal).getPod(namespace, name),
    namespace: (name, signal) => state.namespace(name) ?? withSignal(ds, signal).getNamespace(name),
  };
}

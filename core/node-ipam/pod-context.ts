/**
 * An ADD's pod context (docs/design-core.md §Node IPAM service): who the allocation is for, the
 * namespace labels its pools must admit, and the pools and static addresses the annotations ask
 * for. Read from NodeInputs (pod + namespace) when the call names a pod.
 */
import type { PodRef } from '../allocator/types.ts';
import { readAnnotations } from './annotations.ts';
import type { NodeInputs } from './inputs.ts';
import { nodeMismatchMessage } from './node-check.ts';
import type { Pod } from '../resources.ts';
import type { AddCall } from './service-types.ts';

export interface PodContext {
  /** The pod to record; absent when the call names none, or the pod does not exist. */
  readonly pod?: PodRef;
  /** The call named a pod the API server does not know: allocate without a pod reference. */
  readonly podNotFound?: boolean;
  readonly namespaceLabels: Readonly<Record<string, string>>;
  /** Pools the annotations ask for (pod's, else namespace's); empty = the call's pools. */
  readonly pools: readonly string[];
  /** Where `pools` came from (annotations.ts `poolsFrom`). */
  readonly poolsFrom?: string;
  /** Static addresses from the pod annotation; empty = none. */
  readonly ips: readonly string[];
}

/** Why an ADD is refused before allocating: a malformed annotation, or a pod of another node. */
export interface PodProblem {
  readonly problem: string;
  /** The pod runs on another node than the call's (`misconfigured`), else `rejected`. */
  readonly wrongNode?: true;
}

/**
 * The pod the context is made from: `inputs.pod`, unless the runtime gave a UID the answer does
 * not carry — then the API server's copy (`inputs.podFromServer`), used whatever its UID, as a
 * pod GET always was (a watch may hold the predecessor of a recreated pod of the same name; the
 * API server's copy is the newest there is).
 */
async function podOf(
  ref: NonNullable<AddCall['pod']>,
  inputs: NodeInputs,
  signal: AbortSignal,
): Promise<Pod | undefined> {
  const pod = await inputs.pod(ref.namespace, ref.name, signal);
  const stale = ref.uid !== undefined && pod?.metadata.uid !== undefined && pod.metadata.uid !== ref.uid;
  return stale && inputs.podFromServer ? inputs.podFromServer(ref.namespace, ref.name, signal) : pod;
}

/**
 * The pod context of `call`. The runtime's copy of the pod's annotations (`call.podAnnotations`,
 * from runtimeConfig) wins over the pod object's; the namespace annotation is the pods' default.
 * A pod object whose UID is not the runtime's is read again from the API server (podOf).
 * @throws what the inputs throw
 */
export async function podContextOf(
  call: AddCall,
  inputs: NodeInputs,
  signal: AbortSignal,
): Promise<PodContext | PodProblem> {
  if (!call.pod) return { namespaceLabels: {}, pools: [], ips: [] };
  const [pod, ns] = await Promise.all([
    podOf(call.pod, inputs, signal),
    inputs.namespace(call.pod.namespace, signal),
  ]);
  const choice = readAnnotations(call.podAnnotations ?? pod?.metadata.annotations, ns?.metadata.annotations);
  if ('problem' in choice) return { problem: choice.problem };
  const requested = {
    namespaceLabels: ns?.metadata.labels ?? {},
    pools: choice.pools,
    ...(choice.poolsFrom ? { poolsFrom: choice.poolsFrom } : {}),
    ips: choice.ips,
  };
  // No such pod (e.g. a static pod whose mirror pod does not exist yet): record the allocation
  // with no pod reference (node + handle), which ipamctl treats as owned while the node
  // exists — a pod reference with no pod would read as a leak an operator could release.
  if (!pod) return { podNotFound: true, ...requested };
  // A pod scheduled on another node than ours (calico #12257): recording this node would let
  // the pod's own node never DEL it and a GC from here free a live pod's address.
  const podNode = pod.spec?.nodeName;
  if (podNode !== undefined && podNode !== '' && podNode !== call.node)
    return {
      wrongNode: true,
      problem: nodeMismatchMessage(`pod ${call.pod.namespace}/${call.pod.name} runs on`, podNode, call.node),
    };
  // The UID is the runtime's (K8S_POD_UID) or none: the pod object's current UID may be a
  // newer pod of the same name (a recreated StatefulSet pod), not the sandbox's.
  return {
    pod: {
      namespace: call.pod.namespace,
      name: call.pod.name,
      ...(call.pod.uid !== undefined ? { uid: call.pod.uid } : {}),
    },
    ...requested,
  };
}

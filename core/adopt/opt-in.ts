/**
 * A node's opt-in to adoption (docs/design-adopt.md): the Node label `blockipam.io/adopt=true` gives
 * the node blockipam's conflist and the agent's import of host-local's store; any other value, or
 * none, leaves the node on host-local (or rolls it back). Read by the agent, which acts on it, and
 * by `ipamctl check`, which tells a pod address host-local still holds from one blockipam lost.
 */
import type { KubeObject } from '../resources.ts';

/** The Node label that opts a node in to adoption: `blockipam.io/adopt`. */
export const ADOPT_LABEL = 'blockipam.io/adopt';

/** Whether `node` is opted in: labelled {@link ADOPT_LABEL}`=true` exactly (no other value counts). */
export function isAdoptionOptedIn(node: Pick<KubeObject, 'metadata'>): boolean {
  return node.metadata.labels?.[ADOPT_LABEL] === 'true';
}

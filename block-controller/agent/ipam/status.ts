/**
 * STATUS from the node's own state (docs/design-agent.md §IPAM server): the service's STATUS gets
 * STATUS_API_MS; when it fails for the API server's sake (unreachable, 5xx, refused credentials,
 * out of time) the answer comes from the agent's last synced view instead — the same rule
 * (core's STATUS) over a datastore that knows only the node's own blocks and takes "no
 * knowledge" of the rest as no obstacle. So an IPAM outage keeps nodes Ready; only a node with
 * no usable pool, or full blocks and no right to claim or borrow, reports not ready.
 */
import { errorKindOf } from 'blockipam/core/node-ipam';
import type { NodeInputs, NodeIpam } from 'blockipam/core/node-ipam';
import { createNodeIpam } from 'blockipam/core/node-ipam';
import type { Datastore } from 'blockipam/core';
import { F } from '../../shared/index.ts';
import type { Logger } from '../../shared/index.ts';

// 2 s: the container runtime polls STATUS every few seconds and waits for it; an API server
// that has not answered the STATUS reads by then is taken as away, and the view answers.
const STATUS_API_MS = 2_000;

// forbidden: an RBAC 403, refused credentials as much as auth's 401
const API_TROUBLE = new Set(['unavailable', 'timeout', 'auth', 'forbidden']);

export interface LastKnownStatusOptions {
  readonly ipam: NodeIpam;
  /** The node's blocks as last seen (view-datastore.ts lastKnownDatastore). */
  readonly lastKnown: Datastore;
  readonly inputs: NodeInputs;
  readonly log: Logger;
}

/** `ipam` with STATUS falling back to the last known state. */
export function withLastKnownStatus(options: LastKnownStatusOptions): NodeIpam {
  const { ipam, log } = options;
  const lastKnown = createNodeIpam({ ds: options.lastKnown, inputs: options.inputs });
  let degraded = false; // logged when it changes, not at every poll
  return {
    add: (call, signal) => ipam.add(call, signal),
    del: (call, signal) => ipam.del(call, signal),
    check: (call, signal) => ipam.check(call, signal),
    gc: (call, signal) => ipam.gc(call, signal),
    async status(call, signal) {
      try {
        const outcome = await ipam.status(
          call,
          AbortSignal.any([signal, AbortSignal.timeout(STATUS_API_MS)]),
        );
        if (degraded) log.info('STATUS answered from the API server again', { [F.node]: call.node });
        degraded = false;
        return outcome;
      } catch (error) {
        const kind = errorKindOf(error);
        if (!API_TROUBLE.has(kind)) throw error;
        const outcome = await lastKnown.status(call, AbortSignal.timeout(STATUS_API_MS));
        if (!degraded)
          log.warn('STATUS answered from the last known state', {
            [F.node]: call.node,
            [F.reason]: `${kind}: ${(error as Error).message}`,
            outcome: outcome.kind,
          });
        degraded = true;
        return outcome;
      }
    },
  };
}

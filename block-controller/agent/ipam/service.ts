/**
 * The agent's node IPAM service, composed (docs/design-agent.md §IPAM server): core's node IPAM
 * service over core's batching datastore over the view of the node's blocks, with the allocator
 * options batching calls for — core's backoff capped at 10 ms between compare-and-swap retries
 * (core's `batchedBackoffSleep`): a 409 under batching means another writer, and the callers of
 * the failed batch come back together in one UPDATE. The authority that confirms a DEL or CHECK is read
 * through the same batching datastore, so a confirmed DEL's release is batched too.
 */
import { batchedBackoffSleep, createBatchingDatastore } from 'blockipam/core';
import type { AllocatorOptions, BatchingDatastore, Datastore } from 'blockipam/core';
import { createNodeIpam } from 'blockipam/core/node-ipam';
import type { NodeInputs, NodeIpam } from 'blockipam/core/node-ipam';
import { errorFields, F } from '../../shared/index.ts';
import type { Logger } from '../../shared/index.ts';

export interface AgentServiceOptions {
  readonly node: string;
  /**
   * Where the batching datastore reads and writes: the view of the node's blocks, which records
   * what the agent's writes did to each handle (ViewDatastore.written: with `authority`, core's
   * NodeIpamOptions.written).
   */
  readonly view: Datastore & { readonly written?: (handle: string) => readonly string[] | undefined };
  /**
   * Where a DEL or CHECK that `view` may answer only in part looks (core's rule, NodeIpamOptions.authority) before answering
   * (core's NodeIpamOptions.authority): the view's `direct` side, whose LIST of the node's blocks
   * reaches the API server. Only its LISTs are used: the service reads them through the batching
   * datastore (BatchingDatastore.readingFrom), so what such a DEL releases goes out in the same
   * batched UPDATEs as every other change. Absent: `view` alone answers.
   */
  readonly authority?: Datastore;
  readonly inputs: NodeInputs;
  readonly log: Logger;
  /**
   * Waits ms (≥ 0) between compare-and-swap retries, before the 10 ms cap; default a real timer.
   * Tests inject one (with `random`) to see the waits the allocator asks for.
   */
  readonly sleep?: (ms: number) => Promise<void>;
  /** uniform in [0, 1): the backoff's jitter; default Math.random. */
  readonly random?: () => number;
}

export interface AgentService {
  readonly ipam: NodeIpam;
  /** The batching datastore the service writes through (its counters become metrics). */
  readonly batching: BatchingDatastore;
}

/**
 * A busy block's next UPDATE waits this long after the previous one returned, ms (core's
 * `BatchingOptions.paceMs`): in a burst the changes of that moment join it, so a block takes
 * fewer, larger writes; a lone ADD on an idle block never waits (docs/design-agent.md §IPAM server).
 */
const BATCH_PACE_MS = 20;

/**
 * How long an ADD's claim waits for the controller to list a new pool (the claims policy refuses
 * it until then), ms: 10 s covers a controller's first reconcile after an install, and ends well
 * inside a call's default 30 s budget, so a pool that stays unlisted (the controller down) is
 * still answered with the policy's refusal, not a timeout.
 */
const UNLISTED_POOL_WAIT_MS = 10_000;

/** The service; it logs each dual-stack rollback that left addresses allocated (warn). */
export function agentNodeIpam(options: AgentServiceOptions): AgentService {
  const { node, log } = options;
  const batching = createBatchingDatastore(options.view, { paceMs: BATCH_PACE_MS });
  const allocator: Omit<AllocatorOptions, 'signal' | 'stats'> = {
    sleep: batchedBackoffSleep(options.sleep),
    ...(options.random ? { random: options.random } : {}),
    // right after an install the controller has not listed the pools yet: a claim waits for it
    unlistedPool: { waitMs: UNLISTED_POOL_WAIT_MS },
    onRollbackFailure: (f) =>
      log.warn('dual-stack rollback left addresses allocated', {
        [F.node]: node,
        [F.handle]: f.handle,
        [F.address]: f.addresses.join(','),
        ...errorFields(f.error),
      }),
  };
  const ipam = createNodeIpam({
    ds: batching,
    // a confirmed DEL writes through the same batches as every other change
    ...(options.authority ? { authority: batching.readingFrom(options.authority) } : {}),
    ...(options.view.written ? { written: options.view.written } : {}),
    inputs: options.inputs,
    allocator,
  });
  return { ipam, batching };
}

/**
 * The agent's Prometheus metrics (beside the shared ones of block-controller/shared/metrics.ts).
 * Every series carries `node`, so a federated view over all agents needs no relabelling.
 */
import { Histogram } from 'prom-client';
import type { BatchingStats } from 'blockipam/core';
import { ADD_FAILURE_REASONS, addFailureReasonOf } from 'blockipam/core/node-ipam';
import type { AddAnswer } from 'blockipam/core/node-ipam';
import {
  createMetrics,
  METRIC_PREFIX,
  metricMakers,
  readinessGauge,
  scrapedCounter,
} from '../shared/index.ts';

const P = `${METRIC_PREFIX}agent_`;

/** The agent's metrics: the shared ones (DaemonMetrics) and its own, labels typed. */
export type AgentMetrics = ReturnType<typeof createAgentMetrics>;

export function createAgentMetrics() {
  const base = createMetrics('agent');
  const { gauge, counter } = metricMakers(base.registry, P);
  return {
    ...base,
    blocksClaimed: counter('blocks_claimed_total', 'Blocks the agent pre-claimed for its node', [
      'node',
      'pool',
    ]),
    blocksReleased: counter('blocks_released_total', 'Idle blocks of its node the agent released', [
      'node',
      'pool',
    ]),
    freeAddresses: gauge('free_addresses', "Free addresses in the node's affine blocks, per eligible pool", [
      'node',
      'pool',
      'family',
    ]),
    affineBlocks: gauge('affine_blocks', 'Blocks affine to the node, per eligible pool', [
      'node',
      'pool',
      'family',
    ]),
    watermark: gauge('min_free_addresses', 'The pre-claim watermark (IPAMConfig minFreeAddressesPerNode)', [
      'node',
    ]),
    atBlockLimit: gauge(
      'at_block_limit',
      '1 when a pool is under the watermark and the node holds maxBlocksPerNode blocks of its family',
      ['node', 'pool'],
    ),
    tokenRefreshes: counter(
      'token_refreshes_total',
      "TokenRequests for the plugin's kubeconfig, by result (ok, error)",
      ['node', 'result'],
    ),
    hostLocalFiles: gauge(
      'host_local_files',
      "Entries of host-local's store while the node is adopted (--host-local-store), by state: imported (recorded in a block), pending (no live pod holds it, within the grace period), quarantined (moved aside), conflict (a live pod holds it, not importable: kept), unaccounted (live pod addresses in the node's blocks in no entry nor allocation: the conflist held back)",
      ['node', 'state'],
    ),
    adoptPasses: counter(
      'adopt_passes_total',
      'Host-local import passes of an opted-in node, by outcome: done, error',
      ['node', 'status'],
    ),
    upkeepPasses: counter(
      'upkeep_passes_total',
      'Pre-claim / release passes, by outcome: done, waiting (watches not synced or own Node missing), error',
      ['node', 'status'],
    ),
    routePasses: counter(
      'route_passes_total',
      'Route passes (--routes), by outcome: done, waiting (view not synced or own Node missing), error',
      ['node', 'status'],
    ),
    masqueradePasses: counter(
      'masquerade_passes_total',
      'Masquerade passes (--masquerade), by outcome: unchanged, written (why: start, plan, drift), waiting (pools not listed yet), error',
      ['node', 'status', 'why'],
    ),
    routesSkipped: gauge(
      'routes_skipped',
      'Routes the last route pass could not plan, by family (4, 6; unknown for an entry that is no CIDR) and reason (no-internal-ip: the target node has no InternalIP of the family; covers-node-address, duplicate-dst, invalid-cidr)',
      ['node', 'family', 'reason'],
    ),
    ipamRequests: counter(
      'ipam_requests_total',
      'IPAM socket requests by op (add, del, check, gc, status; unknown when unparsable) and outcome (the outcome kind, or error_<kind>)',
      ['node', 'op', 'outcome'],
    ),
    ipamRequestSeconds: new Histogram({
      name: `${P}ipam_request_duration_seconds`,
      help: 'IPAM socket requests, from accept to answer, by op',
      labelNames: ['node', 'op'],
      // 1 ms … 10 s: a warm ADD is one block UPDATE (~10 ms); a claim or a retry storm is more
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [base.registry],
    }),
    cniAddFailures: counter(
      'cni_add_failures_total',
      `ADDs on the IPAM socket that allocated nothing, by reason (core's bounded set of ${ADD_FAILURE_REASONS.length}: ${ADD_FAILURE_REASONS.join(', ')})`,
      ['node', 'reason'],
    ),
    deletionQueueEntries: gauge(
      'deletion_queue_entries',
      'DELs the plugin queued on the node for the agent, left after the last replay pass',
      ['node'],
    ),
    deletionQueueReplays: counter(
      'deletion_queue_replays_total',
      'Queued DELs the agent replayed, by result (released, failed: kept for the next pass)',
      ['node', 'result'],
    ),
  };
}

/** Nodes whose every reason series exists (at 0 until counted), per counter. */
const addFailureNodes = new WeakMap<AgentMetrics['cniAddFailures'], Set<string>>();

/**
 * Counts an answered CNI call in `blockipam_agent_cni_add_failures_total{node,reason}` when it is
 * an ADD whose node IPAM operation allocated nothing (`add`: how it ended; absent for any other
 * call, and for an ADD the CNI layer refused before asking), by core's addFailureReasonOf (one of
 * ADD_FAILURE_REASONS: 11 series per node). Every reason's series is there (at 0) from the first
 * request on, so a rate over it is defined before the first failure.
 */
export function countAddFailure(
  metrics: Pick<AgentMetrics, 'cniAddFailures'>,
  node: string,
  add: AddAnswer | undefined,
): void {
  const counter = metrics.cniAddFailures;
  const nodes = addFailureNodes.get(counter) ?? new Set<string>();
  addFailureNodes.set(counter, nodes);
  if (!nodes.has(node)) {
    for (const reason of ADD_FAILURE_REASONS) counter.inc({ node, reason }, 0);
    nodes.add(node);
  }
  if (add === undefined) return;
  const reason = addFailureReasonOf(add);
  if (reason !== undefined) counter.inc({ node, reason });
}

/** Label pairs (family, reason) each registry has seen skip: they drop to 0, never vanish. */
const seenSkips = new WeakMap<AgentMetrics['routesSkipped'], Set<string>>();

/**
 * Sets `blockipam_agent_routes_skipped{node,family,reason}` to a pass's counts (skip-report.ts
 * skipCounts): a pair seen before and absent now is set to 0, so a resolved skip shows as 0.
 */
export function setRouteSkips(
  metrics: Pick<AgentMetrics, 'routesSkipped'>,
  node: string,
  counts: readonly { family: string; reason: string; count: number }[],
): void {
  const gauge = metrics.routesSkipped;
  const seen = seenSkips.get(gauge) ?? new Set<string>();
  seenSkips.set(gauge, seen);
  const now = new Map(counts.map((c) => [`${c.family}\u0000${c.reason}`, c.count]));
  for (const key of new Set([...seen, ...now.keys()])) {
    const [family = '', reason = ''] = key.split('\u0000');
    gauge.set({ node, family, reason }, now.get(key) ?? 0);
    seen.add(key);
  }
}

/** result label → the BatchingStats counter it reads. */
const UPDATE_RESULTS = {
  written: 'updatesWritten',
  conflict: 'serverConflicts',
  failed: 'updatesFailed',
} as const;
const CHANGE_RESULTS = {
  written: 'changesWritten',
  rejected: 'changesRejected',
  aborted: 'changesAborted',
  refused: 'localConflicts',
  deferred: 'ordinalWaits',
} as const;

/**
 * Exposes the IPAM server's batching datastore counters (core's BatchingStats) as
 * `blockipam_agent_block_updates_total{node,result}` and
 * `blockipam_agent_block_changes_total{node,result}`, read at scrape time (core counts; nothing
 * is counted twice). Every series is there from the start, at 0 until the service exists.
 * @param stats the counters now; undefined while the service is not made yet
 */
export function observeBatching(
  metrics: Pick<AgentMetrics, 'registry'>,
  node: string,
  stats: () => BatchingStats | undefined,
): void {
  const counter = (name: string, help: string, results: Record<string, keyof BatchingStats>): void =>
    scrapedCounter(metrics.registry, { name, help, labelNames: ['node', 'result'], prefix: P }, () => {
      const now = stats();
      return Object.entries(results).map(([result, key]) => [{ node, result }, now?.[key] ?? 0] as const);
    });
  counter(
    'block_updates_total',
    'Block UPDATEs the IPAM server sent (batched: one carries every change queued for the block), by result: written; conflict (409, another writer changed the block: its changes are re-read and re-applied); failed (any other error: its changes fail)',
    UPDATE_RESULTS,
  );
  counter(
    'block_changes_total',
    "Block changes (one request's allocation or release in one block) handed to the IPAM server's batched writes, by result: written; rejected (their UPDATE failed, or a change queued before them was dropped); aborted (the request gave up while its change was queued: dropped, never sent); refused (not computed on the block's latest state: re-read at once); deferred (it changed an ordinal a queued change changes: re-read once that was sent)",
    CHANGE_RESULTS,
  );
}

/**
 * Exposes the view's confirmation LISTs (ViewStats.confirmLists: LISTs of the node's blocks sent
 * to the API server to confirm a DEL or CHECK the view may answer only in part) as
 * `blockipam_agent_ipam_confirm_lists_total{node}`, read at scrape time; 0 from the start.
 * @param count the count now (monotonic)
 */
export function observeConfirmLists(
  metrics: Pick<AgentMetrics, 'registry'>,
  node: string,
  count: () => number,
): void {
  scrapedCounter(
    metrics.registry,
    {
      name: 'ipam_confirm_lists_total',
      help: "LISTs of the node's blocks the IPAM server sent to the API server to confirm a DEL or CHECK the view may answer only in part (concurrent ones share a LIST; a DEL of a handle the agent allocated or released lately, found whole in the view, sends none)",
      labelNames: ['node'],
      prefix: P,
    },
    () => [[{ node }, count()]],
  );
}

/**
 * `blockipam_agent_ready{node}`: 1 while the agent's `/readyz` answers 200, else 0, read at scrape
 * time from `failing` — the agent passes `() => failingChecks(ready)` over the checks its HTTP
 * server answers `/readyz` from (agent.ts), so the gauge is the probe's answer, not a copy of it.
 */
export function observeAgentReady(
  metrics: Pick<AgentMetrics, 'registry'>,
  node: string,
  failing: () => readonly string[],
): void {
  readinessGauge(metrics.registry, 'agent_ready', { node }, failing);
}

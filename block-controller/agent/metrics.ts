/**
 * The agent's Prometheus metrics (beside the shared ones of block-controller/shared/metrics.ts).
 * Every series carries `node`, so a federated view over all agents needs no relabelling.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { BatchingStats } from 'blockipam/core';
import { ADD_FAILURE_REASONS, addFailureReasonOf } from 'blockipam/core/node-ipam';
import type { AddAnswer } from 'blockipam/core/node-ipam';
import { createMetrics, METRIC_PREFIX, readinessGauge } from '../shared/index.ts';
import type { DaemonMetrics } from '../shared/index.ts';

const P = `${METRIC_PREFIX}agent_`;

export interface AgentMetrics extends DaemonMetrics {
  readonly blocksClaimed: Counter<'node' | 'pool'>;
  readonly blocksReleased: Counter<'node' | 'pool'>;
  readonly freeAddresses: Gauge<'node' | 'pool' | 'family'>;
  readonly affineBlocks: Gauge<'node' | 'pool' | 'family'>;
  readonly watermark: Gauge<'node'>;
  readonly atBlockLimit: Gauge<'node' | 'pool'>;
  readonly tokenRefreshes: Counter<'node' | 'result'>;
  readonly upkeepPasses: Counter<'node' | 'status'>;
  readonly routePasses: Counter<'node' | 'status'>;
  readonly masqueradePasses: Counter<'node' | 'status' | 'why'>;
  readonly routesSkipped: Gauge<'node' | 'family' | 'reason'>;
  readonly ipamRequests: Counter<'node' | 'op' | 'outcome'>;
  readonly ipamRequestSeconds: Histogram<'node' | 'op'>;
  readonly cniAddFailures: Counter<'node' | 'reason'>;
  readonly deletionQueueEntries: Gauge<'node'>;
  readonly deletionQueueReplays: Counter<'node' | 'result'>;
}

export function createAgentMetrics(): AgentMetrics {
  const base = createMetrics('agent');
  const registers = [base.registry];
  return {
    ...base,
    blocksClaimed: new Counter({
      name: `${P}blocks_claimed_total`,
      help: 'Blocks the agent pre-claimed for its node',
      labelNames: ['node', 'pool'],
      registers,
    }),
    blocksReleased: new Counter({
      name: `${P}blocks_released_total`,
      help: 'Idle blocks of its node the agent released',
      labelNames: ['node', 'pool'],
      registers,
    }),
    freeAddresses: new Gauge({
      name: `${P}free_addresses`,
      help: "Free addresses in the node's affine blocks, per eligible pool",
      labelNames: ['node', 'pool', 'family'],
      registers,
    }),
    affineBlocks: new Gauge({
      name: `${P}affine_blocks`,
      help: 'Blocks affine to the node, per eligible pool',
      labelNames: ['node', 'pool', 'family'],
      registers,
    }),
    watermark: new Gauge({
      name: `${P}min_free_addresses`,
      help: 'The pre-claim watermark (IPAMConfig minFreeAddressesPerNode)',
      labelNames: ['node'],
      registers,
    }),
    atBlockLimit: new Gauge({
      name: `${P}at_block_limit`,
      help: '1 when a pool is under the watermark and the node holds maxBlocksPerNode blocks of its family',
      labelNames: ['node', 'pool'],
      registers,
    }),
    tokenRefreshes: new Counter({
      name: `${P}token_refreshes_total`,
      help: "TokenRequests for the plugin's kubeconfig, by result (ok, error)",
      labelNames: ['node', 'result'],
      registers,
    }),
    upkeepPasses: new Counter({
      name: `${P}upkeep_passes_total`,
      help: 'Pre-claim / release passes, by outcome: done, waiting (watches not synced or own Node missing), error',
      labelNames: ['node', 'status'],
      registers,
    }),
    routePasses: new Counter({
      name: `${P}route_passes_total`,
      help: 'Route passes (--routes), by outcome: done, waiting (view not synced or own Node missing), error',
      labelNames: ['node', 'status'],
      registers,
    }),
    masqueradePasses: new Counter({
      name: `${P}masquerade_passes_total`,
      help: 'Masquerade passes (--masquerade), by outcome: unchanged, written (why: start, plan, drift), waiting (pools not listed yet), error',
      labelNames: ['node', 'status', 'why'],
      registers,
    }),
    routesSkipped: new Gauge({
      name: `${P}routes_skipped`,
      help: 'Routes the last route pass could not plan, by family (4, 6; unknown for an entry that is no CIDR) and reason (no-internal-ip: the target node has no InternalIP of the family; covers-node-address, duplicate-dst, invalid-cidr)',
      labelNames: ['node', 'family', 'reason'],
      registers,
    }),
    ipamRequests: new Counter({
      name: `${P}ipam_requests_total`,
      help: 'IPAM socket requests by op (add, del, check, gc, status; unknown when unparsable) and outcome (the outcome kind, or error_<kind>)',
      labelNames: ['node', 'op', 'outcome'],
      registers,
    }),
    ipamRequestSeconds: new Histogram({
      name: `${P}ipam_request_duration_seconds`,
      help: 'IPAM socket requests, from accept to answer, by op',
      labelNames: ['node', 'op'],
      // 1 ms … 10 s: a warm ADD is one block UPDATE (~10 ms); a claim or a retry storm is more
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    cniAddFailures: new Counter({
      name: `${P}cni_add_failures_total`,
      help: `ADDs on the IPAM socket that allocated nothing, by reason (core's bounded set of ${ADD_FAILURE_REASONS.length}: ${ADD_FAILURE_REASONS.join(', ')})`,
      labelNames: ['node', 'reason'],
      registers,
    }),
    deletionQueueEntries: new Gauge({
      name: `${P}deletion_queue_entries`,
      help: 'DELs the plugin queued on the node for the agent, left after the last replay pass',
      labelNames: ['node'],
      registers,
    }),
    deletionQueueReplays: new Counter({
      name: `${P}deletion_queue_replays_total`,
      help: 'Queued DELs the agent replayed, by result (released, failed: kept for the next pass)',
      labelNames: ['node', 'result'],
      registers,
    }),
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
  const counter = (name: string, help: string, results: Record<string, keyof BatchingStats>): void => {
    const seen: Record<string, number> = {};
    new Counter({
      name: `${P}${name}`,
      help,
      labelNames: ['node', 'result'],
      registers: [metrics.registry],
      collect() {
        const now = stats();
        for (const [result, key] of Object.entries(results)) {
          const count = now?.[key] ?? 0;
          this.inc({ node, result }, Math.max(0, count - (seen[result] ?? 0)));
          seen[result] = Math.max(count, seen[result] ?? 0);
        }
      },
    });
  };
  counter(
    'block_updates_total',
    'Block UPDATEs the IPAM server sent (batched: one carries every change queued for the block), by result: written; conflict (409, another writer changed the block: its changes are re-read and re-applied); failed (any other error: its changes fail)',
    UPDATE_RESULTS,
  );
  counter(
    'block_changes_total',
    "Block changes (one request's allocation or release in one block) handed to the IPAM server's batched writes, by result: written; rejected (their UPDATE failed, or a change queued before them was dropped); aborted (the request gave up while its change was queued: dropped, never sent); refused (not computed on the block's latest state: re-read at once)",
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
  let seen = 0;
  new Counter({
    name: `${P}ipam_confirm_lists_total`,
    help: "LISTs of the node's blocks the IPAM server sent to the API server to confirm a DEL or CHECK the view may answer only in part (concurrent ones share a LIST; a DEL of a handle the agent allocated or released lately, found whole in the view, sends none)",
    labelNames: ['node'],
    registers: [metrics.registry],
    collect() {
      const now = count();
      this.inc({ node }, Math.max(0, now - seen));
      seen = Math.max(now, seen);
    },
  });
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

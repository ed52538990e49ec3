/**
 * The controller's metrics: Calico kube-controllers' IPAM set under the blockipam_ prefix (same
 * names after the prefix, same `ippool` / `node` labels, so dashboards port over), blockipam's
 * own pool, node-headroom, leak and block-churn figures where Calico has none, plus leadership
 * and pass counters. The shared registry (block-controller/shared/metrics.ts) carries API
 * requests, conflicts and watch restarts. Every label value comes from a bounded set: pools,
 * Nodes that exist (or nodes that hold allocations), fixed reasons — never a pod or an address.
 * Each metric's type, labels, meaning and cardinality bound: docs/design-controller.md §Metrics
 * (the one table; each definition's `help` below says the same in brief).
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { METRIC_PREFIX as P, readinessGauge } from '../shared/index.ts';

/** The controller's metrics, labels typed. */
export type ControllerMetrics = ReturnType<typeof controllerMetrics>;

/** Registers the controller's metrics on `registry`. */
export function controllerMetrics(registry: Registry) {
  // defined here, not with shared/metrics.ts metricMakers: test/charts/monitoring.test.ts holds
  // the modules that construct metrics to exactly its METRIC_MODULES list
  const gauge = <L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> =>
    new Gauge({ name: P + name, help, labelNames, registers: [registry] });
  const counter = <L extends string>(name: string, help: string, labelNames: L[]): Counter<L> =>
    new Counter({ name: P + name, help, labelNames, registers: [registry] });
  return {
    inUse: gauge('ipam_allocations_in_use', 'Allocated addresses, by pool and node', ['ippool', 'node']),
    borrowed: gauge(
      'ipam_allocations_borrowed',
      'Allocated addresses in a block not affine to their node, by pool and node',
      ['ippool', 'node'],
    ),
    blocks: gauge('ipam_blocks', 'IPAM blocks, by pool and affine node ("" = unowned)', ['ippool', 'node']),
    gcCandidates: gauge(
      'ipam_allocations_gc_candidates',
      'Allocations that look leaked and wait for their grace period, by pool and node',
      ['ippool', 'node'],
    ),
    gcReclamations: counter(
      'ipam_allocations_gc_reclamations_total',
      'Leaked allocations released, by pool and node',
      ['ippool', 'node'],
    ),
    leaksFound: counter(
      'ipam_leaks_found_total',
      'Allocations first seen leaked (pod-gone, pod-uid-differs, node-gone), by pool and reason',
      ['ippool', 'reason'],
    ),
    poolSize: gauge('ipam_ippool_size', 'Assignable addresses of the pool', ['ippool']),
    poolReserved: gauge('ipam_ippool_reserved', 'Addresses of the pool inside IPReservations', ['ippool']),
    poolAllocated: gauge('ipam_ippool_allocated', "Allocated addresses in the pool's blocks", ['ippool']),
    poolFree: gauge('ipam_ippool_free', 'Free addresses of the pool (size - allocated - reserved)', [
      'ippool',
    ]),
    poolFreeInClaimedBlocks: gauge(
      'ipam_ippool_free_in_claimed_blocks',
      'Free addresses of the pool inside claimed blocks (for their nodes, or by borrowing)',
      ['ippool'],
    ),
    poolBlocksClaimed: gauge('ipam_ippool_blocks_claimed', 'Blocks claimed inside the pool', ['ippool']),
    poolBlocksUnclaimed: gauge(
      'ipam_ippool_blocks_unclaimed',
      'Block-sized ranges of the pool a node can still claim',
      ['ippool'],
    ),
    poolCondition: gauge(
      'ipam_ippool_condition',
      '1 while the IPPool status condition is True (Ready, Allocatable, NearlyExhausted, Exhausted, Disabled)',
      ['ippool', 'condition'],
    ),
    nodeHeadroom: gauge(
      'ipam_node_headroom',
      "Free addresses in an existing node's affine blocks of a pool it may claim in",
      ['ippool', 'node'],
    ),
    nodeShort: gauge(
      'ipam_node_short',
      '1 for a node below the watermark in a pool that cannot claim a block there, by reason',
      ['ippool', 'node', 'reason'],
    ),
    blockClaims: counter('ipam_block_claims_total', 'Blocks that gained a node affinity, by pool', [
      'ippool',
    ]),
    blockReleases: counter('ipam_block_releases_total', 'Blocks deleted or made unowned, by pool', [
      'ippool',
    ]),
    blocksIgnored: gauge(
      'ipam_blocks_ignored',
      'IPAM blocks routes and allocation ignore (status condition Trusted=False), by reason',
      ['reason'],
    ),
    blocksFrozen: gauge(
      'ipam_blocks_frozen',
      'Trusted IPAM blocks allocation does not use (routed and releasable; status condition Trusted reason Frozen), by first freeze reason',
      ['reason'],
    ),
    blocksUnrouted: gauge(
      'ipam_blocks_unrouted',
      'Trusted IPAM blocks no node routes (they hold a node address), by reason',
      ['reason'],
    ),
    ipamNodeWrites: counter('ipamnode_writes_total', 'IPAMNodes written, by op (create, update, delete)', [
      'op',
    ]),
    leader: gauge('controller_leader', '1 while this replica holds the leader lease', []),
    passes: counter('controller_passes_total', 'Reconcile passes, by outcome (done, skipped, failed)', [
      'outcome',
    ]),
  };
}

/**
 * `blockipam_controller_ready`: 1 while this replica's `/readyz` answers 200 (a standby always; the
 * leader once its watches synced and while none fails), else 0, read at scrape time from `failing`
 * — run.ts passes `() => failingChecks(ready)` over the checks its HTTP server answers `/readyz`
 * from. Exported by every replica (beside `blockipam_controller_leader`).
 */
export function observeControllerReady(registry: Registry, failing: () => readonly string[]): void {
  readinessGauge(registry, 'controller_ready', {}, failing);
}

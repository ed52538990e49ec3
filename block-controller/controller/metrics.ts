/**
 * The controller's metrics: Calico kube-controllers' IPAM set under the blockipam_ prefix (same
 * names after the prefix, same `ippool` / `node` labels, so dashboards port over), plus
 * leadership and pass counters. The shared registry (block-controller/shared/metrics.ts)
 * carries API requests, conflicts and watch restarts.
 *
 * | metric                                         | type    | labels       | meaning |
 * | ---------------------------------------------- | ------- | ------------ | ------- |
 * | blockipam_ipam_allocations_in_use              | gauge   | ippool, node | allocated addresses (node = the allocation's node) |
 * | blockipam_ipam_allocations_borrowed            | gauge   | ippool, node | of those, in a block affine to another node (or unowned) |
 * | blockipam_ipam_blocks                          | gauge   | ippool, node | blocks (node = affinity, "" when unowned) |
 * | blockipam_ipam_allocations_gc_candidates       | gauge   | ippool, node | allocations that look leaked, waiting for their grace period |
 * | blockipam_ipam_allocations_gc_reclamations_total | counter | ippool, node | leaked allocations released |
 * | blockipam_ipam_ippool_size                     | gauge   | ippool       | assignable addresses of the pool (saturates at 2^53−1) |
 * | blockipam_ipam_ippool_reserved                 | gauge   | ippool       | addresses of the pool inside IPReservations |
 * | blockipam_ipam_blocks_unrouted                 | gauge   | reason       | trusted blocks given no route (covers-node-address) |
 * | blockipam_ipamnode_writes_total                | counter | op           | IPAMNodes created, updated, deleted |
 * | blockipam_controller_leader                    | gauge   |              | 1 while this replica leads |
 * | blockipam_controller_passes_total              | counter | outcome      | reconcile passes (done, skipped, failed) |
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';

const P = 'blockipam_';

export interface ControllerMetrics {
  inUse: Gauge<'ippool' | 'node'>;
  borrowed: Gauge<'ippool' | 'node'>;
  blocks: Gauge<'ippool' | 'node'>;
  gcCandidates: Gauge<'ippool' | 'node'>;
  gcReclamations: Counter<'ippool' | 'node'>;
  poolSize: Gauge<'ippool'>;
  poolReserved: Gauge<'ippool'>;
  blocksIgnored: Gauge<'reason'>;
  blocksUnrouted: Gauge<'reason'>;
  ipamNodeWrites: Counter<'op'>;
  leader: Gauge;
  passes: Counter<'outcome'>;
}

/** Registers the controller's metrics on `registry`. */
export function controllerMetrics(registry: Registry): ControllerMetrics {
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
    poolSize: gauge('ipam_ippool_size', 'Assignable addresses of the pool', ['ippool']),
    poolReserved: gauge('ipam_ippool_reserved', 'Addresses of the pool inside IPReservations', ['ippool']),
    blocksIgnored: gauge(
      'ipam_blocks_ignored',
      'IPAM blocks routes and allocation ignore (status condition Trusted=False), by reason',
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

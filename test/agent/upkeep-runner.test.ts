// The pre-claim loop plans from the view of the node's blocks: its own claims count the moment
// they succeed, before (here: without) any watch event, so a pass claims what the watermark needs
// and no more; every pass counts in upkeep_passes_total.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { affineSelector, MemoryDatastore } from 'blockipam/core';
import { createViewDatastore } from '../../block-controller/agent/ipam/view-datastore.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import type { AgentState } from '../../block-controller/agent/state.ts';
import { Upkeep } from '../../block-controller/agent/upkeep/runner.ts';
import { Lifecycle } from '../../block-controller/shared/index.ts';
import { pool } from '../core/fixtures.ts';
import { quietLog as log } from './fixtures.ts';

const NODE = 'n1';
const POOL = pool('v4', { cidr: '10.70.0.0/16', blockSize: 26 }, '2026-01-01T00:00:00Z');

/** An upkeep loop over a memory store whose watch never delivers anything. */
function setup(minFreeAddressesPerNode: number) {
  const inner = new MemoryDatastore({ pools: [POOL] });
  const view = createViewDatastore({ inner, node: NODE, watched: () => [] });
  const state = {
    node: NODE,
    synced: true,
    nodeObject: () => ({ metadata: { name: NODE, labels: {} } }),
    config: () => ({ metadata: { name: 'default' }, spec: { minFreeAddressesPerNode } }),
    pools: () => [POOL],
    reservations: () => [],
    nodeBlocks: () => [],
    onChange: () => undefined,
  } as unknown as AgentState;
  const metrics = createAgentMetrics();
  const upkeep = new Upkeep({ state, view, log, metrics, lifecycle: new Lifecycle(log), tickMs: 3_600_000 });
  const passes = async (status: string): Promise<number> =>
    (await metrics.upkeepPasses.get()).values.find((v) => v.labels.status === status)?.value ?? 0;
  return { inner, upkeep, passes };
}

describe('upkeep runner', () => {
  test('claims what the watermark needs from its own claims alone, and counts its passes', async () => {
    // 100 free addresses need two /26 blocks (61 usable each)
    const { inner, upkeep, passes } = setup(100);
    await upkeep.run();
    await upkeep.run();
    await upkeep.stop();
    const claimed = await inner.blocks.list({ labelSelector: affineSelector(NODE) });
    assert.equal(claimed.length, 2, 'two blocks, though the watch reported none');
    assert.equal(await passes('done'), 2);
  });
});

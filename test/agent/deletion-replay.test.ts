/**
 * The agent's replay of the deletion queue (block-controller/agent/ipam/deletion-replay.ts): it
 * waits for the service (no DEL before the node's blocks have listed), then releases each entry,
 * counts `released` / `failed`, keeps a failed entry and reports the queue's size.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { enqueueDel, queuedFiles } from 'blockipam/core/cni';
import type { DelCall, NodeIpam } from 'blockipam/core/node-ipam';
import { Lifecycle } from '../../block-controller/shared/index.ts';
import { startDeletionReplay } from '../../block-controller/agent/ipam/deletion-replay.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { quietLog as log } from './fixtures.ts';

const dir = join(mkdtempSync(join(tmpdir(), 'bipam-replay-')), 'del-queue');
after(() => rmSync(join(dir, '..'), { recursive: true, force: true }));
const queue = (containerID: string): void =>
  void enqueueDel(dir, {
    attachment: { network: 'net1', containerID, ifname: 'eth0' },
    node: 'node-a',
    queuedAt: new Date().toISOString(),
    reason: 'HTTP 401',
  });

void it('waits for the service, then releases, keeps what failed and reports the queue', async () => {
  queue('ok');
  queue('bad');
  const calls: DelCall[] = [];
  const ipam = {
    del: (call: DelCall) => {
      calls.push(call);
      return call.attachment.containerID === 'bad'
        ? Promise.reject(new Error('HTTP 503'))
        : Promise.resolve({ released: 1 });
    },
  } as unknown as NodeIpam;
  let service: NodeIpam | string = 'not synced yet: blocks';
  const metrics = createAgentMetrics();
  const lifecycle = new Lifecycle(log);
  const replay = startDeletionReplay({ dir, node: 'node-a', ipam: () => service, log, metrics, lifecycle });
  try {
    // not synced: nothing asked, nothing removed
    assert.equal(await replay.pass(), undefined);
    assert.equal(calls.length, 0);
    assert.equal(queuedFiles(dir).length, 2);
    service = ipam;
    await replay.pass();
    assert.deepEqual(calls.map((c) => [c.attachment.containerID, c.node]).sort(), [
      ['bad', 'node-a'],
      ['ok', 'node-a'],
    ]);
    assert.equal(queuedFiles(dir).length, 1, 'the failed entry stays');
    const value = async (name: string, result?: string) =>
      (await metrics.registry.getSingleMetric(name)?.get())?.values.find(
        (v) => result === undefined || v.labels.result === result,
      )?.value;
    assert.equal(await value('blockipam_agent_deletion_queue_replays_total', 'released'), 1);
    assert.equal(await value('blockipam_agent_deletion_queue_replays_total', 'failed'), 1);
    assert.equal(await value('blockipam_agent_deletion_queue_entries'), 1);
  } finally {
    await lifecycle.shutdown('test');
  }
});

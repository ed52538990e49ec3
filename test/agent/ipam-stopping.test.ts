/**
 * The agent's IPAM server wired as the agent runs it (startAgentIpam) when the agent starts
 * stopping in the middle of a hand-off: a call answered READY before the stop is served once its
 * client sends GO (the client is committed and will not fall back); once the drain is done the
 * socket is gone, so the next client's connect fails (it takes the direct path).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { createNodeBlocksView, startAgentIpam } from '../../block-controller/agent/ipam/index.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import type { AgentState } from '../../block-controller/agent/state.ts';
import { createLogger, Lifecycle } from '../../block-controller/shared/index.ts';
import { answerDoc, askSocket, cniCall } from '../helpers/ipam-socket.ts';

const root = mkdtempSync(join(tmpdir(), 'ipam-stopping-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('stopping between READY and GO: the committed call is served; then the socket is gone', async () => {
  const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
  const lifecycle = new Lifecycle(log, { drainTimeoutMs: 5_000 });
  const ds = new MemoryDatastore();
  // every watch listed, the node's blocks none
  const stub = { unsynced: [], nodeBlocks: () => [], nodeBlocksCurrent: true, onChange: () => undefined };
  const state = (): AgentState => stub as unknown as AgentState;
  const path = join(root, 'ipam.sock');
  await startAgentIpam({
    path,
    node: 'n1',
    ds,
    view: createNodeBlocksView({ node: 'n1', ds, state }),
    state,
    log,
    metrics: createAgentMetrics(),
    lifecycle,
  });
  let stopped: Promise<boolean> | undefined;
  const answer = await askSocket(path, cniCall('DEL'), {
    beforeGo: () => void (stopped = lifecycle.shutdown('test')),
  });
  assert.ok(lifecycle.stopping, `the agent was stopping when GO came: ${JSON.stringify(answer)}`);
  assert.equal(answer.code, 0, JSON.stringify(answerDoc(answer) ?? answer));
  assert.equal(await stopped, true, 'the shutdown drained the call');
  // the listener is closed by now: a new client cannot connect
  await assert.rejects(askSocket(path, cniCall('DEL')), /ENOENT|ECONNREFUSED/);
});

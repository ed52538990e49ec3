/**
 * The agent's readiness gauge `blockipam_agent_ready{node}` against its `/readyz`, with the real
 * agent process on the real API server: while test/agent/api-gate.ts holds the LIST of one of its
 * watches (namespaces), the agent has not synced — /readyz answers 503 and the gauge is 0; once
 * the LIST goes through, /readyz answers 200 and the gauge is 1. Readiness is moved by holding a
 * request, never by waiting a time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { kubectl } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { applyNode, eventually, scrape, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';
import { startApiGate, type ApiGate } from './api-gate.ts';

const NODE = 'ready-1';
let gate: ApiGate;
let agent: AgentProcess | undefined;

/** The value of `blockipam_agent_ready` for NODE in a scrape, or undefined when absent. */
async function readyGauge(a: AgentProcess): Promise<number | undefined> {
  const { status, text } = await scrape(a, '/metrics');
  assert.equal(status, 200);
  const line = text.split('\n').find((l) => /^blockipam_agent_ready\{/.test(l));
  if (line === undefined) return undefined;
  assert.match(line, new RegExp(`node="${NODE}"`), line);
  assert.match(line, /component="agent"/, line);
  return Number(line.split(' ').at(-1));
}

describe('agent readiness: /readyz and blockipam_agent_ready agree', () => {
  before(async () => {
    installCrds();
    applyNode(NODE);
    gate = await startApiGate();
  });
  after(async () => {
    await agent?.kill();
    await gate.close();
    kubectl(['delete', 'node', NODE]);
  });

  test('not synced (a watch LIST held): 503 and 0; synced: 200 and 1', async () => {
    const list = gate.hold(
      (method, url) =>
        method === 'GET' && url.pathname === '/api/v1/namespaces' && !url.searchParams.has('watch'),
    );
    agent = startAgent(NODE, ['--kubeconfig', gate.kubeconfig]);
    await list.held;
    const notReady = await scrape(agent, '/readyz');
    assert.equal(notReady.status, 503);
    assert.match(notReady.text, /^watches: not synced/);
    assert.equal(await readyGauge(agent), 0);
    list.release();
    // 120 s: start-up of a Node process took > 90 s at load 30-60 (test/e2e/api-outage.int.test.ts)
    let last = notReady;
    await eventually(
      'ready',
      async () => ((last = await scrape(agent!, '/readyz')).status === 200 ? true : undefined),
      120_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; /readyz: ${last.status} ${last.text}`);
    });
    assert.equal(await readyGauge(agent), 1);
  });
});

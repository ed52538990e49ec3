/**
 * The churn bench's report (test/bench/churn-report.ts) and its log reader (churn-lib.ts'
 * readBlockipamLogs): the section says which way blockipam's plugin reached its node's IPAM
 * (`--blockipam-mode`) and counts, from the plugin's own `done` lines, the calls the agent served.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { readBlockipamLogs } from './churn-lib.ts';
import { renderChurn, type ChurnPhase, type ChurnRun } from './churn-report.ts';

const done = (containerID: string, cmd: string, fields: Record<string, unknown>): string =>
  JSON.stringify({
    msg: 'done',
    containerID,
    cmd,
    startMs: 9,
    totalMs: 30,
    cpuStartMs: 5,
    cpuMs: 12,
    ...fields,
  });

const phase = (ids: string[]): ChurnPhase => ({
  ipam: 'blockipam',
  name: 'blockipam (agents, IPAM socket)',
  phase: 'add',
  cmd: 'ADD',
  calls: ids.length,
  loadAtStart: 1,
  startedAtMs: 0,
  wallMs: 100,
  ms: ids.map(() => 40),
  perNodeWallMs: [40],
  failures: 0,
  failureSamples: [],
  distinct: ids.length,
  requests: 2,
  conflicts: 0,
  kinds: {},
  apiserverCpuS: 0.1,
  etcdCpuS: 0.1,
  ipamCpuS: 0.1,
  agentCpuS: 0.1,
  delayed: 0,
  ids: ids.map((id) => `${id}-ADD`),
  doneAtMs: ids.map(() => 40),
});

function withLog(lines: string[], body: (file: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'churn-report-'));
  try {
    const file = join(dir, 'n1.log');
    writeFileSync(file, `${lines.join('\n')}\n`);
    body(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const run = (file: string, mode: ChurnRun['blockipamMode'], ids: string[]): ChurnRun => ({
  when: '2026-12-03T19:00:00.000Z',
  nodes: 1,
  pods: ids.length,
  serverVersion: 'v1.37.2',
  node: 'v24.21.0',
  logDir: '/tmp',
  blockipamLogs: [file],
  calicoLogs: [],
  phases: [phase(ids)],
  warmCpuMs: { blockipam: 10 },
  ...(mode ? { blockipamMode: mode } : {}),
});

describe('readBlockipamLogs', () => {
  test('takes the path from the done line; a forwarded call has no requests or lock of its own', () => {
    withLog(
      [
        done('a', 'ADD', { path: 'agent' }),
        done('b', 'ADD', { path: 'direct', apiRequests: 8, lockWaitMs: 3, lockHeldMs: 20 }),
      ],
      (file) => {
        const calls = new Map(readBlockipamLogs([file]).map((c) => [c.containerID, c]));
        assert.equal(calls.get('a')?.path, 'agent');
        assert.equal(calls.get('a')?.apiRequests, undefined);
        assert.equal(calls.get('a')?.lockWaitMs, undefined);
        assert.equal(calls.get('b')?.path, 'direct');
        assert.equal(calls.get('b')?.apiRequests, 8);
      },
    );
  });
});

describe('renderChurn', () => {
  // agent mode: the method says the calls went plugin → agent socket; the table counts them
  test('agent mode: said in the method, calls served by the agent counted', () => {
    withLog([done('a', 'ADD', { path: 'agent' }), done('b', 'ADD', { path: 'agent' })], (file) => {
      const { markdown } = renderChurn(run(file, 'agent', ['a', 'b']));
      assert.match(markdown, /`--blockipam-mode agent`/);
      assert.match(markdown, /plugin → agent socket/);
      assert.match(markdown, /\| served by the agent \|/);
      assert.match(markdown, /\| 0 \(the agent sends them\) \| 2 of 2 \|/);
      assert.doesNotMatch(markdown, /Infinity|NaN/);
    });
  });
  // direct mode: one call took the direct path, and the section says the direct path ran
  test('direct mode: said in the method, no call counted as the agent’s', () => {
    withLog([done('a', 'ADD', { path: 'direct', apiRequests: 8, lockWaitMs: 3, lockHeldMs: 20 })], (file) => {
      const { markdown } = renderChurn(run(file, 'direct', ['a']));
      assert.match(markdown, /`--blockipam-mode direct`/);
      assert.match(markdown, /\| 8 \/ 8 \| 0 of 1 \|/);
      assert.doesNotMatch(markdown, /plugin → agent socket/);
    });
  });
});

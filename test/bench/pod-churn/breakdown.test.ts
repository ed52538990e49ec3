/**
 * The pod-churn breakdown's pure parts (test/bench/pod-churn/breakdown.ts): up.sh's recorded
 * daemons named as their part, the plugin's calls split per phase against the agents' time, each
 * node's first block claim, and the CPU table.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callSplit, cpuTable, firstClaims, PARTS, recordedPart, type PhaseCost } from './breakdown.ts';

test('recordedPart names up.sh’s daemons', () => {
  const cases: [string, string | undefined][] = [
    ['apiserver', 'kube-apiserver'],
    ['etcd', 'etcd'],
    ['controller-manager', 'kube-controller-manager'],
    ['scheduler', 'kube-scheduler'],
    ['kubelet-node-2', 'kubelets'],
    ['containerd-node-3', 'containerd + shims'],
    ['anchor-node-1', undefined], // a namespace's anchor: no part
  ];
  for (const [name, part] of cases) assert.equal(recordedPart(name), part, name);
});

describe('callSplit', () => {
  const t0 = Date.parse('2026-12-05T05:00:00.000Z');
  const at = (s: number): string => new Date(t0 + s * 1000).toISOString();
  const cost = (agent?: PhaseCost['agent']): PhaseCost => ({
    startMs: t0,
    endMs: t0 + 10_000,
    cpu: Object.fromEntries(PARTS.map((p) => [p, 0])) as PhaseCost['cpu'],
    ...(agent ? { agent } : {}),
  });
  const lines = [
    { time: at(1), msg: 'done', cmd: 'ADD', durationMs: 100 }, // the forwarder's field
    { time: at(2), msg: 'done', cmd: 'ADD', durationMs: 300 },
    { time: at(3), msg: 'done', cmd: 'ADD', totalMs: 200 }, // the direct path's field
    { time: at(4), msg: 'done', cmd: 'DEL', durationMs: 50 },
    { time: at(5), msg: 'done', cmd: 'STATUS', durationMs: 9 }, // not an ADD or a DEL
    { time: at(6), msg: 'served', cmd: 'ADD', durationMs: 999 }, // not a done line
    { time: at(11), msg: 'done', cmd: 'ADD', durationMs: 999 }, // after the phase
    { time: at(-1), msg: 'done', cmd: 'DEL', durationMs: 999 }, // before it
  ];

  test('the calls ended in the phase, their mean and p50, and the agents’ mean', () => {
    const split = callSplit(
      lines,
      cost({ add: { count: 3, seconds: 0.375 }, del: { count: 0, seconds: 0 } }),
    );
    assert.deepEqual(split, [
      { cmd: 'ADD', calls: 3, wholeMeanMs: 200, wholeP50Ms: 200, agentRequests: 3, agentMeanMs: 125 },
      { cmd: 'DEL', calls: 1, wholeMeanMs: 50, wholeP50Ms: 50 }, // no agent request counted: no agent figure
    ]);
  });
  test('without a scrape, the whole call only; without calls, no row', () => {
    assert.deepEqual(callSplit(lines.slice(0, 1), cost()), [
      { cmd: 'ADD', calls: 1, wholeMeanMs: 100, wholeP50Ms: 100 },
    ]);
    assert.deepEqual(callSplit([], cost()), []);
  });
});

test('firstClaims: each node’s earliest block, seconds after the start (before it: negative)', () => {
  const start = Date.parse('2026-12-05T05:00:00.500Z');
  const claims = firstClaims(
    [
      { node: 'node-1', created: '2026-12-05T05:00:03Z' },
      { node: 'node-1', created: '2026-12-05T05:00:02Z' }, // the earlier of node-1's two
      { node: 'node-2', created: '2026-12-05T04:59:50Z' }, // claimed before the phase (pre-claim)
      { node: 'node-3', created: 'not a time' }, // unreadable: left out
    ],
    start,
  );
  assert.deepEqual(claims, { 'node-1': 1.5, 'node-2': -10.5 });
});

test('cpuTable: a row per run and phase, a column per part, their sum; a missing cost is a dash', () => {
  const cpu = Object.fromEntries(PARTS.map((p, i) => [p, i])) as PhaseCost['cpu'];
  const table = cpuTable([
    {
      label: 'host-local (run 1)',
      phases: [
        { phase: 'create', seconds: 12.34 },
        { phase: 're-create', seconds: 5 },
      ],
      costs: [{ startMs: 0, endMs: 1, cpu }],
      splits: [],
    },
  ]).split('\n');
  assert.equal(table.length, 4);
  assert.equal(table[0], `| run | phase | wall s | ${PARTS.join(' | ')} | all |`);
  assert.equal(
    table[2],
    '| host-local (run 1) | create | 12.3 | 0.0 | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 | 7.0 | 8.0 | 36.0 |',
  );
  assert.equal(
    table[3],
    `| host-local (run 1) | re-create | 5.0 | ${PARTS.map(() => '—').join(' | ')} | — |`,
  );
});

// What ipamctl check says about a host-local cluster adopted node by node (cli/audit/adoption-checks.ts,
// through owner-checks.ts' podIPProblems and unallocatedProblem, then the whole audit on the memory
// store): host-local's pod IPs on a node not opted in are one `adoption-pending` finding per node
// (information); on an opted-in node an unallocated pod IP stays `pod-ip-unallocated`, its hint
// naming the agent's import.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ADOPT_LABEL, MemoryDatastore } from 'blockipam/core';
import type { IPPool, Pod, PodCIDRNode } from 'blockipam/core';
import { PENDING_SAMPLE } from '../../cli/audit/adoption-checks.ts';
import { runAudit } from '../../cli/audit/audit.ts';
import {
  liveIPUsers,
  managedRanges,
  podIPProblems,
  unallocatedProblem,
} from '../../cli/audit/owner-checks.ts';
import { buildReport } from '../../cli/audit/report.ts';
import { auditNode, auditPod } from '../../cli/audit/snapshot.ts';
import type { Snapshot } from '../../cli/audit/snapshot.ts';
import { printSummary } from '../../cli/audit/summary.ts';
import { shapedBlock, SHAPES_T0 } from '../core/block-shapes.ts';
import { pool } from '../core/fixtures.ts';

/** kind's pod network as a podCIDR pool: each node's /24 its block. */
const KIND = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks: true });
/** The same range as an ordinary pool (no podCIDR pool). */
const PLAIN = pool('kind', { cidr: '10.244.0.0/16', blockSize: 24 });

/** w1 not labelled, w2 opted in, w3 labelled with another value; w<i> has 10.244.<i>.0/24. */
const NODES: PodCIDRNode[] = [undefined, 'true', 'false'].map((label, i) => ({
  metadata: { name: `w${i + 1}`, ...(label === undefined ? {} : { labels: { [ADOPT_LABEL]: label } }) },
  spec: { podCIDR: `10.244.${i + 1}.0/24` },
}));

/** Each node's podCIDR block, as the controller creates it (no allocation). */
const BLOCKS = NODES.map((n, i) =>
  shapedBlock({ cidr: `10.244.${i + 1}.0/24`, pool: 'kind', node: n.metadata.name }),
);

/** A Running pod on `node` with `ip`. */
function pod(name: string, node: string, ip: string): Pod {
  return {
    metadata: { namespace: 'ns', name, uid: `uid-${name}` },
    spec: { nodeName: node },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

/** `count` pods on w1 with 10.244.1.<10 + i>, listed highest address first. */
function w1Pods(count: number): Pod[] {
  return Array.from({ length: count }, (_, i) => pod(`old-${i}`, 'w1', `10.244.1.${10 + i}`)).reverse();
}

function snapshot(pods: Pod[], pools: IPPool[] = [KIND]): Snapshot {
  return {
    blocks: BLOCKS,
    pools,
    reservations: [],
    config: undefined,
    nodes: new Set(NODES.map((n) => n.metadata.name)),
    nodeAdoption: new Map(NODES.map((n) => [n.metadata.name, auditNode(n)])),
    pods: pods.map(auditPod),
    resourceVersions: {},
    startedAtMs: SHAPES_T0,
  };
}

function podIPs(s: Snapshot): ReturnType<typeof podIPProblems> {
  return podIPProblems(s, liveIPUsers(s.pods, managedRanges(s)));
}

const importHint =
  /^node w2 is adopted \(blockipam\.io\/adopt=true\) and IPPool kind is a podCIDR pool: its agent's import should have recorded 10\.244\.2\.9 from host-local's store — blockipam_agent_host_local_files\{state="pending"\} above 0 on that agent is a file not matched yet, quarantined once unmatched for the grace period \(--host-local-grace-seconds, default 120 s\): run check again after it\. Until it is recorded, 10\.244\.2\.9 may be handed out twice: .*kubectl delete pod -n ns new/;

describe('podIPProblems over a snapshot: adoption-pending', () => {
  test('host-local’s pod IPs on a node not opted in: one information finding for the node, no candidate', () => {
    const { problems, candidates } = podIPs(snapshot(w1Pods(PENDING_SAMPLE + 2)));
    assert.deepEqual(candidates, []);
    assert.equal(problems.length, 1, JSON.stringify(problems, null, 1));
    const [found] = problems;
    assert.equal(found?.kind, 'adoption-pending');
    assert.equal(found?.severity, 'info');
    assert.equal(
      found?.message,
      'node w1 is not adopted yet (no blockipam.io/adopt=true): host-local still holds the IPs of its pods in podCIDR pool kind — 7 pod IP(s) no IPAMBlock allocates: 10.244.1.10 (ns/old-0), 10.244.1.11 (ns/old-1), 10.244.1.12 (ns/old-2), 10.244.1.13 (ns/old-3), 10.244.1.14 (ns/old-4), … 2 more',
    );
    assert.deepEqual(found?.objects, [
      'Node/w1',
      'IPPool/kind',
      ...[0, 1, 2, 3, 4].map((i) => `Pod/ns/old-${i}`),
    ]);
    assert.equal(
      found?.hint,
      "when ipamctl adopt plan --node w1 shows no conflict: kubectl label node w1 blockipam.io/adopt=true (its agent then records these addresses from host-local's store)",
    );
  });

  test('a label other than "true" is not opted in; each node its own finding', () => {
    const { problems, candidates } = podIPs(
      snapshot([pod('a', 'w1', '10.244.1.5'), pod('b', 'w3', '10.244.3.5'), pod('c', 'w3', '10.244.3.6')]),
    );
    assert.deepEqual(candidates, []);
    assert.deepEqual(
      problems.map((p) => [p.kind, p.message.replace(/ — .*: /, ': ')]),
      [
        [
          'adoption-pending',
          'node w1 is not adopted yet (no blockipam.io/adopt=true): host-local still holds the IPs of its pods in podCIDR pool kind: 10.244.1.5 (ns/a)',
        ],
        [
          'adoption-pending',
          'node w3 is not adopted yet (no blockipam.io/adopt=true): host-local still holds the IPs of its pods in podCIDR pool kind: 10.244.3.5 (ns/b), 10.244.3.6 (ns/c)',
        ],
      ],
    );
  });

  // Each case: pods, pools, and the candidates left (address, pod): they stay pod-ip-unallocated.
  const stays: [string, Pod[], IPPool[], string[]][] = [
    [
      'an opted-in node: a candidate (the import should have recorded it)',
      [pod('new', 'w2', '10.244.2.9')],
      [KIND],
      ['10.244.2.9 new'],
    ],
    [
      'an address outside its node’s podCIDR and blocks',
      [pod('odd', 'w1', '10.244.2.9')],
      [KIND],
      ['10.244.2.9 odd'],
    ],
    ['an ordinary pool (no podCIDR pool)', [pod('old', 'w1', '10.244.1.9')], [PLAIN], ['10.244.1.9 old']],
    ['a pod on a Node not listed', [pod('lost', 'w9', '10.244.1.9')], [KIND], ['10.244.1.9 lost']],
  ];
  for (const [name, pods, pools, want] of stays)
    test(`stays a candidate: ${name}`, () => {
      const { problems, candidates } = podIPs(snapshot(pods, pools));
      assert.deepEqual(problems, []);
      assert.deepEqual(
        candidates.map((c) => `${c.address} ${c.pod.metadata.name}`),
        want,
      );
    });

  test('an address a block of the node holds, beside its podCIDR, is pending too', () => {
    const s = snapshot([pod('x', 'w1', '10.244.9.3')]);
    s.blocks = [...BLOCKS, shapedBlock({ cidr: '10.244.9.0/24', pool: 'kind', node: 'w1' })];
    assert.deepEqual(
      podIPs(s).problems.map((p) => p.kind),
      ['adoption-pending'],
    );
  });
});

describe('unallocatedProblem on an opted-in node', () => {
  test('in a podCIDR pool: the hint names the agent’s import, its metric and the grace period', () => {
    const s = snapshot([pod('new', 'w2', '10.244.2.9')]);
    const [candidate] = podIPs(s).candidates;
    assert.ok(candidate);
    const found = unallocatedProblem(candidate, s);
    assert.equal(found.kind, 'pod-ip-unallocated');
    assert.match(found.message, /IPAMBlock 10-244-2-0-24 covers it and does not record it$/);
    assert.match(found.hint ?? '', importHint);
  });

  test('in an ordinary pool: the hint does not', () => {
    const s = snapshot([pod('new', 'w2', '10.244.2.9')], [PLAIN]);
    const [candidate] = podIPs(s).candidates;
    assert.ok(candidate);
    assert.match(unallocatedProblem(candidate, s).hint ?? '', /^10\.244\.2\.9 may be handed out twice: /);
  });
});

describe('check over a cluster adopted node by node (memory store)', () => {
  async function audit(pods: Pod[]): Promise<Awaited<ReturnType<typeof runAudit>>> {
    const ds = new MemoryDatastore({ pools: [KIND], blocks: BLOCKS, nodes: NODES, pods });
    return runAudit(ds, { nowMs: SHAPES_T0 + 60_000 });
  }

  test('nodes not adopted yet: information only, exit 0, and the summary prints them', async () => {
    const result = await audit([...w1Pods(3), pod('b', 'w3', '10.244.3.5')]);
    const report = buildReport(result, { server: 's', kubeSystemUID: 'u' });
    assert.deepEqual(report.byKind, { 'adoption-pending': 2, 'empty-block': 3 });
    assert.equal(report.problemCount, 0);
    let out = '';
    printSummary({ write: (t: string) => (out += t) }, report, 0);
    assert.match(
      out,
      /Information \(5\):\n {2}Pod IPs on nodes not adopted yet \(host-local still holds them\) \[adoption-pending\] \(2\):\n {4}- node w1 is not adopted yet .* 3 pod IP\(s\) no IPAMBlock allocates: 10\.244\.1\.10 \(ns\/old-0\), 10\.244\.1\.11 \(ns\/old-1\), 10\.244\.1\.12 \(ns\/old-2\)\n {6}what to do: when ipamctl adopt plan --node w1 shows no conflict: kubectl label node w1 blockipam\.io\/adopt=true/,
    );
    assert.match(out, /Check complete: no problems found\./);
  });

  test('an opted-in node’s unrecorded pod IP: pod-ip-unallocated (confirmed), hint naming the import', async () => {
    const result = await audit([...w1Pods(2), pod('new', 'w2', '10.244.2.9')]);
    assert.deepEqual(
      result.problems.map((p) => p.kind),
      ['pod-ip-unallocated', 'adoption-pending', 'empty-block', 'empty-block', 'empty-block'],
    );
    assert.match(result.problems[0]?.hint ?? '', importHint);
    assert.notEqual(result.snapshot.resourceVersions['ipamblocks (confirmation)'], undefined);
  });
});

// ipamctl adopt plan's output from a plan: one row per podCIDR (a node without one, IPv6), one per
// pod address, notes, conflicts each followed by what to fix, the verdict; -o json with counts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planAdoption } from 'blockipam/core';
import type { AdoptionInput, Pod } from 'blockipam/core';
import { printPlan } from '../../cli/adopt/print.ts';

const pod = (name: string, node: string, ip: string): Pod => ({
  metadata: { name, namespace: 'web' },
  spec: { nodeName: node },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});

const input: AdoptionInput = {
  nodes: [
    {
      metadata: { name: 'kind-worker' },
      spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] },
    },
    { metadata: { name: 'kind-worker2' }, spec: { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24'] } },
    { metadata: { name: 'kind-worker3' } },
  ],
  pods: [
    pod('a', 'kind-worker', '10.244.1.2'),
    pod('b', 'kind-worker2', '10.244.2.2'),
    pod('c', 'kind-worker2', '10.99.0.7'),
  ],
  pools: [
    { metadata: { name: 'cluster' }, spec: { cidr: '10.244.0.0/16', blockSize: 24, podCIDRBlocks: true } },
  ],
  blocks: [],
  reservations: [],
};

function printed(format: 'table' | 'json', data: AdoptionInput = input): string {
  let text = '';
  printPlan({ write: (t: string) => (text += t) }, format, planAdoption(data));
  return text;
}

describe('adopt plan output', () => {
  it('tables, notes, conflicts with what to fix, verdict', () => {
    const text = printed('table');
    const lines = text.split('\n');
    assert.match(lines[0] ?? '', /^NODE +PODCIDR +POOL +BLOCKS +EXISTING +ADDRESSES +NODE CONFLICTS$/);
    assert.match(text, /\nkind-worker +10\.244\.1\.0\/24 +cluster +1 × \/24 +- +1 +1\n/);
    assert.match(text, /\nkind-worker +fd00:10:244:1::\/64 +- +not adoptable yet +- +0 +1\n/);
    assert.match(text, /\nkind-worker3 +\(none\) +- +- +- +- +0\n/);
    assert.match(text, /\n10\.244\.1\.2 +web\/a +kind-worker +10\.244\.1\.0\/24 +10-244-1-0-24 +2\n/);
    assert.match(text, /\n10\.99\.0\.7 +web\/c +kind-worker2 +\(outside\) +- +-\n/);
    assert.match(text, /NOTES \(1\):\n {2}no-podcidr: node kind-worker3 has no podCIDR/);
    assert.match(
      text,
      /CONFLICTS \(2\):\n {2}ipv6-podcidr: podCIDR fd00:10:244:1::\/64 of node kind-worker: not adoptable yet \(IPv6 podCIDRs cannot be blocks\)\n {4}what to fix: /,
    );
    assert.match(
      text,
      / {2}outside-podcidr: pod web\/c on node kind-worker2 has 10\.99\.0\.7, outside its node's podCIDRs 10\.244\.2\.0\/24\n {4}what to fix: .*kubectl delete pod -n web c/,
    );
    assert.match(
      text,
      /Plan: 3 node\(s\), 3 pod address\(es\), 2 conflict\(s\): fix each as it says.*Nothing was changed\.\n$/,
    );
  });

  it('a clean plan says every address can stay', () => {
    const clean = { ...input, nodes: input.nodes.slice(1, 2), pods: input.pods.slice(1, 2) };
    assert.match(
      printed('table', clean),
      /Plan: 1 node\(s\), 1 pod address\(es\), no conflict: every pod address can stay where it is\./,
    );
  });

  it('-o json: the plan with counts', () => {
    const data = JSON.parse(printed('json')) as {
      counts: Record<string, number>;
      conflicts: { kind: string }[];
    };
    assert.deepEqual(data.counts, { nodes: 3, podCIDRs: 3, addresses: 3, conflicts: 2, notes: 1 });
    assert.deepEqual(
      data.conflicts.map((c) => c.kind),
      ['ipv6-podcidr', 'outside-podcidr'],
    );
  });
});

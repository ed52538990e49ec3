// host-local's store read for an import (core/adopt/host-local.ts), pure: which files are
// address files, and for one node which addresses are recorded under which handle, which are
// already done (a re-run) and which are quarantined, and why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateOrdinal,
  MemoryDatastore,
  mustParseCidr,
  newBlock,
  parseHostLocalFile,
  planHostLocalImport,
  recordHostLocalImports,
} from 'blockipam/core';
import type { Pod } from 'blockipam/core';

describe('parseHostLocalFile', () => {
  const cases: [string, string, string, ReturnType<typeof parseHostLocalFile>][] = [
    [
      'current format',
      '10.244.1.5',
      'abc123\r\neth0',
      { file: '10.244.1.5', address: '10.244.1.5', containerID: 'abc123', ifname: 'eth0' },
    ],
    [
      'old format: the ID alone',
      '10.244.1.6',
      'def456',
      { file: '10.244.1.6', address: '10.244.1.6', containerID: 'def456', ifname: 'eth0' },
    ],
    [
      'another interface',
      '10.244.1.7',
      'abc\r\nnet1',
      { file: '10.244.1.7', address: '10.244.1.7', containerID: 'abc', ifname: 'net1' },
    ],
    [
      'IPv6, canonical',
      'fd00:10:244:1:0:0:0:5',
      'abc\r\neth0',
      { file: 'fd00:10:244:1:0:0:0:5', address: 'fd00:10:244:1::5', containerID: 'abc', ifname: 'eth0' },
    ],
    ['the lock', 'lock', '', undefined],
    ['the round-robin cursor', 'last_reserved_ip.0', '10.244.1.7', undefined],
    ['empty', '10.244.1.8', '', undefined],
    ['an ID with a slash', '10.244.1.9', '../x\r\neth0', undefined],
  ];
  for (const [name, file, content, want] of cases)
    it(name, () => assert.deepEqual(parseHostLocalFile(file, content), want));
});

describe('planHostLocalImport', () => {
  const pod = (name: string, ip: string, node = 'n1', phase = 'Running'): Pod => ({
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { nodeName: node },
    status: { phase, podIPs: [{ ip }] },
  });
  const file = (address: string, containerID: string) =>
    parseHostLocalFile(address, `${containerID}\r\neth0`)!;
  const block = newBlock({ cidr: mustParseCidr('10.244.1.0/24'), pool: 'kind', node: 'n1', nowMs: 0 });

  it('records each pod’s address under the handle its DEL computes; quarantines the rest, saying why', () => {
    const plan = planHostLocalImport({
      node: 'n1',
      network: 'blockipam',
      files: [
        file('10.244.1.3', 'c3'),
        file('10.244.1.2', 'c2'),
        file('10.244.1.4', 'gone'), // no pod holds it
        file('10.244.1.5', 'c5'), // its pod runs on another node
        file('10.244.1.6', 'c6'), // its pod finished
        file('10.244.2.7', 'c7'), // outside the node's blocks
      ],
      pods: [
        pod('a', '10.244.1.2'),
        pod('b', '10.244.1.3'),
        pod('c', '10.244.1.5', 'n2'),
        pod('d', '10.244.1.6', 'n1', 'Succeeded'),
        pod('e', '10.244.2.7'),
      ],
      blocks: [block],
    });
    assert.deepEqual(
      plan.imports.map((i) => [i.address, i.block, i.ordinal, i.owner.handle, i.owner.pod, i.owner.podUID]),
      [
        ['10.244.1.2', '10-244-1-0-24', 2, 'blockipam.c2.eth0', 'a', 'uid-a'],
        ['10.244.1.3', '10-244-1-0-24', 3, 'blockipam.c3.eth0', 'b', 'uid-b'],
      ],
    );
    assert.deepEqual(plan.done, []);
    assert.deepEqual(
      plan.quarantine.map((q) => q.file),
      ['10.244.1.4', '10.244.1.5', '10.244.1.6'],
    );
    assert.match(
      plan.quarantine[0]!.why,
      /no live pod on node n1 has address 10\.244\.1\.4 \(container gone\)/,
    );
    // a live pod holds it: kept in the store, never moved
    assert.deepEqual(
      plan.conflicts.map((q) => q.file),
      ['10.244.2.7'],
    );
    assert.match(plan.conflicts[0]!.why, /lies in no block of node n1/);
  });

  it('a re-run after the write: done, nothing imported twice; a foreign holder or a reserved ordinal: a conflict, kept', () => {
    const written = allocateOrdinal(
      block,
      2,
      { handle: 'blockipam.c2.eth0', node: 'n1', pod: 'a', namespace: 'default' },
      0,
    )!.block;
    const taken = allocateOrdinal(written, 3, { handle: 'blockipam.other.eth0', node: 'n1' }, 0)!.block;
    const plan = planHostLocalImport({
      node: 'n1',
      network: 'blockipam',
      files: [file('10.244.1.2', 'c2'), file('10.244.1.3', 'c3'), file('10.244.1.255', 'cb')],
      pods: [pod('a', '10.244.1.2'), pod('b', '10.244.1.3'), pod('x', '10.244.1.255')],
      blocks: [taken],
    });
    assert.deepEqual([plan.imports, plan.done, plan.quarantine], [[], ['10.244.1.2'], []]);
    assert.deepEqual(
      plan.conflicts.map((q) => q.why),
      [
        'address 10.244.1.255 of pod default/x is reserved in IPAMBlock 10-244-1-0-24 (network, gateway or broadcast)',
        'address 10.244.1.3 of pod default/b is already allocated in IPAMBlock 10-244-1-0-24 to handle blockipam.other.eth0',
      ],
    );
  });
});

describe('planHostLocalImport: entries with no valid record', () => {
  const block = newBlock({ cidr: mustParseCidr('10.244.1.0/24'), pool: 'kind', node: 'n1', nowMs: 0 });
  it('a live pod’s address: a conflict, kept; no live pod’s: quarantined after the grace period', () => {
    const plan = planHostLocalImport({
      node: 'n1',
      network: 'blockipam',
      files: [],
      unreadable: [
        { file: '10.244.1.7', address: '10.244.1.7' },
        { file: '10.244.1.8', address: '10.244.1.8' },
      ],
      pods: [
        {
          metadata: { name: 'a', namespace: 'default', uid: 'uid-a' },
          spec: { nodeName: 'n1' },
          status: { phase: 'Running', podIPs: [{ ip: '10.244.1.7' }] },
        },
      ],
      blocks: [block],
    });
    assert.deepEqual(
      [plan.conflicts.map((c) => c.file), plan.quarantine.map((q) => q.file), plan.imports],
      [['10.244.1.7'], ['10.244.1.8'], []],
    );
  });
});

describe('recordHostLocalImports', () => {
  const pod = (name: string, ip: string): Pod => ({
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running', podIPs: [{ ip }] },
  });
  const file = (address: string, containerID: string) =>
    parseHostLocalFile(address, `${containerID}\r\neth0`)!;

  it('one write per block; an ordinal another handle took since the plan is lost, not overwritten; a gone block too', async () => {
    const block = newBlock({ cidr: mustParseCidr('10.244.1.0/24'), pool: 'kind', node: 'n1', nowMs: 0 });
    const ds = new MemoryDatastore({ blocks: [block] });
    const listed = (await ds.blocks.get(block.metadata.name))!;
    const plan = planHostLocalImport({
      node: 'n1',
      network: 'blockipam',
      files: [file('10.244.1.2', 'c2'), file('10.244.1.3', 'c3')],
      pods: [pod('a', '10.244.1.2'), pod('b', '10.244.1.3')],
      blocks: [listed],
    });
    // an ADD takes .3 after the plan was made: the import's write conflicts, re-reads, keeps it
    await ds.blocks.update(
      allocateOrdinal(listed, 3, { handle: 'blockipam.new.eth0', node: 'n1' }, 0)!.block,
    );
    const gone = { ...plan.imports[0]!, file: 'x', block: '10-244-9-0-24' };
    const outcome = await recordHostLocalImports(ds, [listed], [...plan.imports, gone]);
    assert.deepEqual(outcome, { recorded: ['10.244.1.2'], done: [], lost: ['10.244.1.3', 'x'] });
    const after = (await ds.blocks.get(block.metadata.name))!;
    assert.equal(after.spec.allocations[2]?.handle, 'blockipam.c2.eth0');
    assert.equal(after.spec.allocations[3]?.handle, 'blockipam.new.eth0');
    const again = await recordHostLocalImports(ds, [after], plan.imports.slice(0, 1));
    assert.deepEqual(again, { recorded: [], done: ['10.244.1.2'], lost: [] });
  });
});

/**
 * The lock hand-off file (ipam-plugin/host/handoff-file.ts): what is read back is exactly what the
 * last holder wrote, for its cluster and node, while younger than 5 s; anything else is no
 * hand-off (never an error); a write that cannot be made leaves none behind.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { newBlock, mustParseCidr } from 'blockipam/core';
import {
  dropHandoff,
  handoffFileOf,
  handoffMaxAgeMs,
  readHandoff,
  writeHandoff,
} from '../../../ipam-plugin/host/handoff-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'bipam-handoff-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const scope = { file: handoffFileOf(join(dir, 'ipam.lock')), cluster: 'https://a|/kc', node: 'n1' };
const fresh = newBlock({ cidr: mustParseCidr('10.0.0.0/26'), pool: 'p', node: 'n1', nowMs: 0 });
const block = { ...fresh, metadata: { ...fresh.metadata, resourceVersion: '42' } };

void describe('lock hand-off file', () => {
  void it('is next to the lock file', () => assert.equal(scope.file, join(dir, 'ipam.lock.handoff.json')));
  void it('reads back what was written, while younger than 5 s', () => {
    writeHandoff(scope, [block], 1_000_000);
    assert.deepEqual(readHandoff(scope, 1_000_000 + handoffMaxAgeMs), [block]);
    assert.equal(readHandoff(scope, 1_000_001 + handoffMaxAgeMs), undefined, 'too old');
    assert.equal(readHandoff(scope, 1_000_000 - 2_000), undefined, 'from the future');
  });
  void it('another cluster or node is no hand-off', () => {
    writeHandoff(scope, [block], 5_000);
    assert.equal(readHandoff({ ...scope, cluster: 'https://b|/kc' }, 5_000), undefined);
    assert.equal(readHandoff({ ...scope, node: 'n2' }, 5_000), undefined);
  });
  for (const [what, text] of [
    ['not JSON', '{"version":1,'],
    [
      'another version',
      JSON.stringify({ version: 2, cluster: scope.cluster, node: 'n1', at: 5_000, blocks: [] }),
    ],
    [
      'blocks not a list',
      JSON.stringify({ version: 1, cluster: scope.cluster, node: 'n1', at: 5_000, blocks: {} }),
    ],
    [
      'a block without resourceVersion',
      JSON.stringify({
        version: 1,
        cluster: scope.cluster,
        node: 'n1',
        at: 5_000,
        blocks: [{ ...block, metadata: { name: 'x' } }],
      }),
    ],
    [
      'a null block',
      JSON.stringify({ version: 1, cluster: scope.cluster, node: 'n1', at: 5_000, blocks: [null] }),
    ],
  ] as const)
    void it(`${what} is no hand-off`, () => {
      writeFileSync(scope.file, text);
      assert.equal(readHandoff(scope, 5_000), undefined);
    });
  void it('absent, dropped, or unwritable: none, and no throw', () => {
    dropHandoff(scope);
    assert.equal(existsSync(scope.file), false);
    assert.equal(readHandoff(scope), undefined);
    dropHandoff(scope);
    const nowhere = { ...scope, file: join(dir, 'missing-dir', 'ipam.lock.handoff.json') };
    writeHandoff(nowhere, [block]);
    assert.equal(existsSync(nowhere.file), false);
  });
  const doc = (blocks: unknown[]): string =>
    JSON.stringify({ version: 1, cluster: scope.cluster, node: 'n1', at: 5_000, blocks });
  for (const [what, bad] of [
    [
      'allocations null (parses, passes a typeof check)',
      { ...block, spec: { ...block.spec, allocations: null } },
    ],
    ['a CIDR that is not one', { ...block, spec: { ...block.spec, cidr: 'garbage' } }],
    ['an allocation that is not one', { ...block, spec: { ...block.spec, allocations: { '5': 7 } } }],
  ] as const)
    void it(`a block with ${what} is no hand-off (core's block invariants)`, () => {
      writeFileSync(scope.file, doc([bad]));
      assert.equal(readHandoff(scope, 5_000), undefined);
    });
  void it('a FIFO at the path is no hand-off, and the read does not block', () => {
    rmSync(scope.file, { force: true });
    assert.equal(spawnSync('mkfifo', [scope.file]).status, 0);
    assert.equal(readHandoff(scope, 5_000), undefined);
    rmSync(scope.file);
  });
  void it('a file writable by group or others, or over 16 MiB, is no hand-off', () => {
    writeFileSync(scope.file, doc([block]));
    assert.deepEqual(readHandoff(scope, 5_000), [block]);
    chmodSync(scope.file, 0o620);
    assert.equal(readHandoff(scope, 5_000), undefined);
    chmodSync(scope.file, 0o600);
    truncateSync(scope.file, 16 * 1024 * 1024 + 1);
    assert.equal(readHandoff(scope, 5_000), undefined);
    rmSync(scope.file);
  });
});

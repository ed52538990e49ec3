/**
 * The lock hand-off file (ipam-plugin/host/handoff-file.ts): what is read back is exactly what the
 * last holder wrote, for its cluster and node, while younger than 5 s; anything else is no
 * hand-off (never an error); a write that cannot be made leaves none behind.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
const block = {
  ...newBlock({ cidr: mustParseCidr('10.0.0.0/26'), pool: 'p', node: 'n1', nowMs: 0 }),
  metadata: { name: '10-0-0-0-26', resourceVersion: '42' },
};

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
});

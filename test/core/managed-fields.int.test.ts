/**
 * `metadata.managedFields` on the real API server: any writer of a block (a node credential
 * included: the policy cannot bound their size) can grow them, and every reader of blocks pays
 * for them. Core's writes reset them, so what another writer planted lasts until the block's next
 * write of ours — the block written back unchanged included (the controller's reset of a block
 * nobody else writes); a write of the status subresource keeps them.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { managedFieldsExcess, mustParseCidr, newBlock, type IPAMBlock } from 'blockipam/core';
import { adminDatastore } from '../helpers/crds.ts';
import { growManagedFields, managedFieldsBytes } from '../helpers/managed-fields.ts';

const ds = adminDatastore();
const block = newBlock({ cidr: mustParseCidr('10.213.0.0/26'), pool: 'mf-pool', node: 'mf-node', nowMs: 0 });
const size = managedFieldsBytes;

after(() => ds.blocks.delete(block.metadata.name).catch(() => undefined));

/** Creates the block (deleting an earlier one) and grows its managedFields to over 50 KB. */
async function planted(): Promise<IPAMBlock> {
  await ds.blocks.delete(block.metadata.name).catch(() => undefined);
  await ds.blocks.create(block);
  const grown = await growManagedFields(ds, block.metadata.name);
  assert.ok(size(grown) > 50_000, `planted: ${size(grown)} bytes of managedFields`);
  assert.ok(managedFieldsExcess(grown), 'core calls them oversized');
  return grown;
}

test('an update of ours resets managedFields another writer grew: they go back to the size of one write', async () => {
  const grown = await planted();
  // a write of ours, as core sends them (the object as read, one change)
  const written = await ds.blocks.update({ ...grown, spec: { ...grown.spec, affinity: null } });
  const stored = await ds.blocks.get(block.metadata.name);
  assert.ok(stored);
  assert.equal(stored.spec.affinity, null);
  assert.ok(size(written) < 2_000, `after our write: ${size(written)} bytes`);
  assert.ok(size(stored) < 2_000, `stored: ${size(stored)} bytes`);
});

test('the block written back unchanged resets them (the controller); a status write does not', async () => {
  const grown = await planted();
  const status = await ds.blocks.updateStatus({ ...grown, status: { conditions: [] } });
  assert.ok(managedFieldsExcess(status), `the status subresource keeps them: ${size(status)} bytes`);
  const written = await ds.blocks.update(status);
  assert.ok(size(written) < 2_000, `after writing it back: ${size(written)} bytes`);
  const stored = await ds.blocks.get(block.metadata.name);
  assert.ok(stored && size(stored) < 2_000 && !managedFieldsExcess(stored), `stored: ${size(stored)} bytes`);
  assert.deepEqual(stored.spec, grown.spec);
});

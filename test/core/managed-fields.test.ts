// core's managedFieldsExcess: a record no set of blockipam's writes leaves is oversized; a large
// block's own large records (every allocation listed once per manager, four managers) are not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allocateOrdinal, managedFieldsExcess, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';

/** One manager's record listing every allocation's fields, as the API server writes it for an Update. */
function recordOf(block: IPAMBlock, manager: string): unknown {
  const allocations = Object.fromEntries(
    Object.keys(block.spec.allocations).map((k) => [
      `f:${k}`,
      { '.': {}, 'f:handle': {}, 'f:node': {}, 'f:sequence': {}, 'f:allocatedAt': {}, 'f:pod': {} },
    ]),
  );
  return {
    manager,
    operation: 'Update',
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    time: '2026-12-05T00:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:spec': { 'f:allocations': allocations, 'f:sequence': {}, 'f:freed': {} } },
  };
}

void describe('managedFieldsExcess', () => {
  const small = newBlock({ cidr: mustParseCidr('10.1.0.0/26'), pool: 'p', node: 'n1', nowMs: 0 });
  let large = newBlock({ cidr: mustParseCidr('10.2.0.0/20'), pool: 'p', node: 'n1', nowMs: 0 });
  for (let i = 2; i <= 4001; i++)
    large = allocateOrdinal(
      large,
      i,
      { handle: `net.${i}.eth0`, node: 'n1', pod: `p${i}`, namespace: 'ns' },
      0,
    )!.block;

  void it('none for an absent, an empty or a small record', () => {
    assert.equal(managedFieldsExcess(small), undefined);
    assert.equal(
      managedFieldsExcess({ ...small, metadata: { ...small.metadata, managedFields: [] } }),
      undefined,
    );
    const one = { ...small, metadata: { ...small.metadata, managedFields: [recordOf(small, 'agent')] } };
    assert.equal(managedFieldsExcess(one), undefined);
  });

  void it("none for a /20 of 4,000 allocations with four managers' records of every field", () => {
    const managedFields = ['agent', 'blockipam-direct', 'controller', 'kubectl-edit'].map((m) =>
      recordOf(large, m),
    );
    assert.ok(JSON.stringify(managedFields).length > 500_000, 'the records are large');
    assert.equal(
      managedFieldsExcess({ ...large, metadata: { ...large.metadata, managedFields } }),
      undefined,
    );
  });

  void it('the bytes and the bound for a small block with 2,000 made-up fields', () => {
    const junk = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`f:junk.example/k${i}`, {}]));
    const managedFields = [{ manager: 'planter', fieldsV1: { 'f:metadata': { 'f:labels': junk } } }];
    const excess = managedFieldsExcess({ ...small, metadata: { ...small.metadata, managedFields } });
    assert.ok(excess);
    assert.equal(excess.bytes, JSON.stringify(managedFields).length);
    assert.equal(excess.bound, 3 * JSON.stringify(small).length + 8 * 1024);
  });
});

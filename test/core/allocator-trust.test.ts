// The allocator acts on trusted blocks only (core/allocator/block-trust.ts): a block listed by
// the node's label but not trusted is neither allocated from nor borrowed from, and labels alone
// never count against maxBlocksPerNode (issue 23, D1's denial of service).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autoAssign, loadSnapshot, mustParseCidr, newBlock, nodeLabel, REGION_LABEL } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { claimBlock } from '../../core/allocator/claim.ts';
import { contextOf } from '../../core/allocator/context.ts';
import { pod, pool, T0, world } from './fixtures.ts';

const P = pool('p', { cidr: '10.14.0.0/24', blockSize: 28 });

/** A block of pool p as core writes it, then `labels` merged over (a forger's edit). */
function block(cidr: string, node: string | null, labels: Record<string, string> = {}): IPAMBlock {
  const b = newBlock({ cidr: mustParseCidr(cidr), pool: 'p', node, nowMs: T0 });
  b.metadata.labels = { ...b.metadata.labels, ...labels };
  return b;
}

void describe('allocator and block trust', () => {
  void it('a forged "affine to n1" label does not stop n1 from claiming at maxBlocksPerNode 1', async () => {
    // n2's block labelled affine to n1 too: the region LIST sees the label, the spec says n2
    const w = world({ pools: [P] });
    await w.ds.blocks.create(block('10.14.0.240/28', 'n2', { [nodeLabel('n1')]: 'affine' }));
    const p = (await loadSnapshot(w.ds)).usable[0]!;
    const got = await claimBlock(contextOf(w.ds, w.options), p, 'n1', [], { held: 0, max: 1, pools: [P] });
    assert.ok(got && got !== 'limit', `claimed: ${JSON.stringify(got)}`);
    assert.equal(got.spec.affinity, 'n1');
  });

  void it("autoAssign: forged labels on another node's block count nothing against the limit", async () => {
    // as above, through autoAssign: n1's LIST by its label returns n2's forged block
    const w = world({ pools: [P], config: { maxBlocksPerNode: 1, strictAffinity: true } });
    await w.ds.blocks.create(block('10.14.0.240/28', 'n2', { [nodeLabel('n1')]: 'affine' }));
    const out = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(out.ok, JSON.stringify(out));
    assert.equal(out.ipv4?.borrowed, false);
    assert.notEqual(out.ipv4?.block, '10-14-0-240-28');
  });

  void it("n1's own block with labels that differ from its spec is not allocated from", async () => {
    // affine to n1 by spec and label, but its region label is forged: ignored, n1 claims another
    const w = world({ pools: [P], config: { strictAffinity: true } });
    await w.ds.blocks.create(block('10.14.0.0/28', 'n1', { [REGION_LABEL]: '10-15-0-0-16' }));
    const out = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.ok(out.ok, JSON.stringify(out));
    assert.notEqual(out.ipv4?.block, '10-14-0-0-28');
  });

  void it('an untrusted unowned block is not borrowed from', async () => {
    // no claims allowed: the only block with room is unowned but labelled affine to n3
    const w = world({ pools: [P], config: { autoAllocateBlocks: false } });
    await w.ds.blocks.create(block('10.14.0.0/28', null, { [nodeLabel('n3')]: 'affine' }));
    const out = await autoAssign(w.ds, { ...pod('a'), node: 'n1' }, w.options);
    assert.equal(out.ok, false, JSON.stringify(out));
    // the same block with its labels as core writes them is borrowed from
    const clean = world({ pools: [P], config: { autoAllocateBlocks: false } });
    await clean.ds.blocks.create(block('10.14.0.0/28', null));
    const borrowed = await autoAssign(clean.ds, { ...pod('a'), node: 'n1' }, clean.options);
    assert.ok(borrowed.ok && borrowed.ipv4?.borrowed, JSON.stringify(borrowed));
  });
});

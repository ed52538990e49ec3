// ipamctl check against blocks an admin poisoned on the real API server — a sequence above 2^52
// written as raw JSON (kubectl: JavaScript cannot express 2^53 + 1), finalizers, ownerReferences,
// a Terminating block holding an allocation, a freed entry dated 2099, a pod whose address no
// block records, managedFields grown to ~40 KB — each named by its kind with what to do (the
// managedFields hint's patch shrinks them); then repair sequence restores the
// block under its resourceVersion and check is clean of it. (No controller manager runs here, so
// the garbage collector never acts on the ownerReferences.)
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isSafeSequence, SEQUENCE_MAX, SEQUENCE_REPAIRABLE_ABOVE } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { Report } from '../../cli/audit/report.ts';
import { kubectl } from '../helpers/control-plane.ts';
import { growManagedFields } from '../helpers/managed-fields.ts';
import {
  blockObject,
  cleanClusterHooks,
  createPod,
  ipamctl,
  poolObject,
  uniqueNamespace,
} from './cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipamctl-tamper-'));
const ns = uniqueNamespace('ipamctl-tamper');
const RESOURCE = 'ipamblocks.ipam.blockipam.io';
/** 2^53 + 1, as JSON text: a JSON number JavaScript reads as 2^53. */
const RAW_2_53_PLUS_1 = '9007199254740993';
let ds: KubeDatastore;

async function check(name: string): Promise<{ code: number; stdout: string; report: Report }> {
  const path = join(dir, `${name}.json`);
  const out = await ipamctl(['check', '-o', path, '--limit', '0']);
  return { ...out, report: JSON.parse(readFileSync(path, 'utf8')) as Report };
}

/** A JSON merge patch of one block, as kubectl sends it (numbers as written: int64 in Go). */
function patch(block: string, json: string): void {
  const out = kubectl(['patch', RESOURCE, block, '--type=merge', '-p', json]);
  assert.equal(out.status, 0, out.stderr);
}

/**
 * Writes spec.sequence 2^53 + 1 as raw JSON. A CRD declaring the JSON-exact maximum (2^53 − 1)
 * refuses it — then the largest value it allows, unsafe too, is written. Returns the value written.
 */
function poisonSequence(block: string): string {
  const out = kubectl([
    'patch',
    RESOURCE,
    block,
    '--type=merge',
    '-p',
    `{"spec":{"sequence":${RAW_2_53_PLUS_1}}}`,
  ]);
  if (out.status === 0) return RAW_2_53_PLUS_1;
  assert.match(
    out.stderr,
    /spec\.sequence: Invalid value: 9007199254740993: .*less than or equal to 9007199254740991/,
  );
  patch(block, `{"spec":{"sequence":${SEQUENCE_MAX}}}`);
  return String(SEQUENCE_MAX);
}

/** A block of pool p4 holding one pod-less allocation of `node` at `ordinal`. */
async function seedBlock(cidr: string, node: string, ordinal: number): Promise<string> {
  const block = blockObject({
    cidr,
    pool: 'p4',
    affinity: node,
    allocations: [{ ordinal, handle: `net.${ordinal}.eth0`, node }],
  });
  await ds.blocks.create(block);
  return block.metadata.name;
}

describe('ipamctl check sees tampering (real API server)', () => {
  cleanClusterHooks({ namespace: ns, nodes: ['n1', 'n2'], onReady: (d) => (ds = d) });

  test('each poisoned block and the unrecorded pod address is named, with what to do', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    const sequenced = await seedBlock('10.244.0.0/26', 'n1', 5);
    const finalized = await seedBlock('10.244.0.64/26', 'n2', 3);
    const owned = await seedBlock('10.244.0.128/26', 'n1', 4);
    const dated = await seedBlock('10.244.0.192/26', 'n2', 6);
    const deleted = await seedBlock('10.244.1.0/26', 'n1', 7);
    const written = poisonSequence(sequenced);
    patch(finalized, '{"metadata":{"finalizers":["example.com/hold"]}}');
    patch(
      owned,
      '{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n2","uid":"5e0c0d3a-0000-4000-8000-000000000001"}]}}',
    );
    patch(dated, '{"spec":{"freed":[{"ordinal":9,"releasedAt":"2099-01-01T00:00:00Z"}]}}');
    patch(deleted, '{"metadata":{"finalizers":["example.com/hold"]}}');
    assert.equal(kubectl(['delete', RESOURCE, deleted, '--wait=false']).status, 0);
    // the wipe: a running pod whose block is gone
    await createPod(ds, { namespace: ns, name: 'wiped', node: 'n1', ip: '10.244.2.9' });
    try {
      const { code, stdout, report } = await check('tampered');
      assert.equal(code, 1, stdout);
      assert.deepEqual(report.byKind, {
        'terminating-block': 1,
        'foreign-metadata': 3,
        'unsafe-sequence': 1,
        'future-date': 1,
        'pod-ip-unallocated': 1,
      });
      const find = (kind: string, text: string) =>
        report.problems.find((p) => p.kind === kind && p.message.includes(text));
      // each poisoned object named by its kind; the words and hints of each: frozen-checks.test.ts
      for (const [kind, name] of [
        ['unsafe-sequence', sequenced],
        ['foreign-metadata', finalized],
        ['foreign-metadata', owned],
        ['foreign-metadata', deleted],
        ['terminating-block', deleted],
        ['future-date', dated],
        ['pod-ip-unallocated', `${ns}/wiped`],
      ] as const)
        assert.ok(find(kind, name)?.hint, `${kind} ${name}`);
      // 2^53 + 1 reads as 2^53: the message shows what JavaScript read
      const shown = written === RAW_2_53_PLUS_1 ? '9007199254740992' : written;
      assert.match(
        find('unsafe-sequence', sequenced)?.message ?? '',
        new RegExp(`spec\\.sequence ${shown} is above 2\\^52`),
      );
      assert.match(find('foreign-metadata', owned)?.message ?? '', /carries ownerReferences to Node n2/);
      assert.match(stdout, /\n {6}what to do: kubectl patch ipamblock /);
    } finally {
      patch(finalized, '{"metadata":{"finalizers":null}}');
      patch(deleted, '{"metadata":{"finalizers":null}}');
    }
  });

  test('repair sequence lowers a poisoned block under its resourceVersion; check is clean of it', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    const name = await seedBlock('10.244.0.0/26', 'n1', 5);
    poisonSequence(name);
    patch(name, `{"spec":{"allocations":{"5":{"sequence":${SEQUENCE_MAX}}}}}`);
    assert.deepEqual(Object.keys((await check('poisoned')).report.byKind), ['unsafe-sequence']);
    const before = (await ds.blocks.get(name))!;

    const plan = await ipamctl(['repair', 'sequence', name]);
    assert.equal(plan.code, 3, plan.stderr);
    assert.match(plan.stdout, /Would write:/);
    assert.equal((await ds.blocks.get(name))?.metadata.resourceVersion, before.metadata.resourceVersion);

    const startedMs = Date.now();
    const done = await ipamctl(['repair', 'sequence', name, '--yes']);
    assert.equal(done.code, 0, done.stdout + done.stderr);
    const after = (await ds.blocks.get(name))!;
    assert.notEqual(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.ok(
      isSafeSequence(after.spec.sequence) && after.spec.sequence > startedMs,
      String(after.spec.sequence),
    );
    const allocation = after.spec.allocations[5]!;
    assert.ok(allocation.sequence <= after.spec.sequence && allocation.sequence > startedMs);
    assert.ok(after.spec.sequence <= SEQUENCE_REPAIRABLE_ABOVE);

    const clean = await check('repaired');
    assert.equal(clean.code, 0, clean.stdout);
    assert.deepEqual(clean.report.byKind, {});

    const again = await ipamctl(['repair', 'sequence', name, '--yes']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, new RegExp(`IPAMBlock ${name} has no unsafe sequence .*: nothing to repair`));
  });

  test('managedFields another writer grew are named; the hint patch resets them and check is clean', async () => {
    await ds.pools.create(poolObject('p4', '10.244.0.0/16'));
    const name = await seedBlock('10.244.3.0/26', 'n1', 5);
    await growManagedFields(ds, name);
    const grown = await check('grown');
    assert.equal(grown.code, 1, grown.stdout);
    assert.deepEqual(grown.report.byKind, { 'oversized-managed-fields': 1 });
    const found = grown.report.problems[0]!;
    assert.match(found.message, new RegExp(`^IPAMBlock ${name}: metadata\\.managedFields are \\d+ bytes`));
    const command = /kubectl patch ipamblock (\S+) --type=merge -p '(.+?)'/.exec(found.hint ?? '');
    assert.ok(command, found.hint);
    patch(command[1]!, command[2]!);
    const clean = await check('reset');
    assert.equal(clean.code, 0, clean.stdout);
    assert.deepEqual(clean.report.byKind, {});
  });
});

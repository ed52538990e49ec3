// Every printer column of every CRD resolves on the objects as blockipam itself writes them
// (ipamctl pool create / config set, core's block claim, the cluster controller's status pass),
// read as the API server's Table (what `kubectl get -o wide` prints). The IPPool columns that
// read status are empty until the controller's first pass — documented in the CRD and in
// docs/design-controller.md — and filled after it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { claimNodeBlock, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPPool } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { Reconciler } from '../../block-controller/controller/reconciler.ts';
import { ipamctl } from '../cli/cluster.ts';
import { listedView, memoryLog } from '../controller/helpers.ts';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

let ds: KubeDatastore;
before(async () => {
  ds = adminDatastore();
  await wipeBlockipam(ds);
});
after(async () => {
  await wipeBlockipam(ds);
  ds.close();
});

interface Table {
  columnDefinitions: { name: string; priority?: number }[];
  rows: { cells: unknown[]; object: { metadata: { name: string } } }[];
}

/** The API server's Table for `plural` (every column, wide ones included). */
async function table(plural: string): Promise<Map<string, Record<string, unknown>>> {
  const t = await ds.transport.request<Table>('GET', `/apis/ipam.blockipam.io/v1alpha1/${plural}`, {
    accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
  });
  const rows = new Map<string, Record<string, unknown>>();
  for (const row of t.rows)
    rows.set(
      row.object.metadata.name,
      Object.fromEntries(t.columnDefinitions.map((c, i) => [c.name, row.cells[i]])),
    );
  return rows;
}

/** The column names whose cell is empty (null, or '' as the server renders a missing value). */
const empty = (row: Record<string, unknown> | undefined): string[] =>
  Object.entries(row ?? {})
    .filter(([, v]) => v === null || v === undefined || v === '')
    .map(([k]) => k);

const STATUS_COLUMNS = [
  'Block Size',
  'Used',
  'Free',
  'State',
  'Blocks',
  'Unclaimed',
  'Short Nodes',
  'Reserved',
  'Ready',
  'Nearly Exhausted',
  'Exhausted',
  'Allocatable',
];

describe('printer columns resolve on the objects blockipam writes', () => {
  it('IPPool: status columns empty before the controller, every column filled after its pass', async () => {
    for (const args of [
      ['pool', 'create', 'pc4', '--cidr', '10.77.0.0/16'],
      ['pool', 'create', 'pc6', '--cidr', 'fd00:77::/64'],
    ]) {
      const run = await ipamctl(args);
      assert.equal(run.code, 0, run.stderr);
    }
    let rows = await table('ippools');
    for (const name of ['pc4', 'pc6'])
      assert.deepEqual(empty(rows.get(name)).sort(), [...STATUS_COLUMNS].sort(), name);
    const pass = await new Reconciler({ ds, view: await listedView(ds), log: memoryLog() }).pass();
    assert.deepEqual(pass.status?.written.sort(), ['pc4', 'pc6']);
    rows = await table('ippools');
    for (const name of ['pc4', 'pc6']) assert.deepEqual(empty(rows.get(name)), [], name);
    assert.equal(
      rows.get('pc4')?.['Block Size'],
      26,
      'the effective size of a pool made without --block-size',
    );
    assert.equal(rows.get('pc6')?.['Block Size'], 122);
    assert.deepEqual(
      ['State', 'Ready', 'Nearly Exhausted', 'Exhausted'].map((c) => rows.get('pc4')?.[c]),
      ['Ready', 'True', 'False', 'False'],
    );
  });

  it('IPAMBlock (claimed through core), IPAMConfig (config set), IPReservation: every column', async () => {
    const pool = (await ds.pools.get('pc4')) as IPPool;
    const got = await claimNodeBlock(ds, {
      pool,
      node: 'pc-node',
      reservations: [],
      held: 0,
      maxBlocksPerNode: 20,
      pools: [pool],
    });
    assert.equal(typeof got, 'object', `claimed: ${JSON.stringify(got)}`);
    // An unowned block (its node deleted).
    await ds.blocks.create(
      newBlock({ cidr: mustParseCidr('10.77.200.0/26'), pool: 'pc4', node: null, nowMs: Date.now() }),
    );
    const blocks = await table('ipamblocks');
    assert.equal(blocks.size, 2);
    for (const [name, row] of blocks) assert.deepEqual(empty(row), [], `${name}: ${JSON.stringify(row)}`);
    // spec.affinity null (unowned): the server prints JSON null as "<no value>".
    assert.equal(blocks.get('10-77-200-0-26')?.['Affinity'], '<no value>');
    const set = await ipamctl(['config', 'set', 'leakGracePeriodSeconds=600']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(empty((await table('ipamconfigs')).get('default')), [], 'schema defaults fill the rest');
    await ds.reservations.create({ metadata: { name: 'pc-res' }, spec: { reservedCIDRs: ['10.77.0.0/30'] } });
    assert.deepEqual(empty((await table('ipreservations')).get('pc-res')), []);
  });
});

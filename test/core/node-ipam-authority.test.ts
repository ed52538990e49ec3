/**
 * The node IPAM service over a `ds` that may lag (core/node-ipam/service.ts,
 * NodeIpamOptions.authority and .written): a DEL answers from `ds` alone only when `ds` accounts
 * for every allocation of the handle — `written` says our writes allocated it and `ds` found each
 * address, or they released it lately and `ds` finds nothing — else it releases through
 * `authority`; a CHECK looks again when `ds` lacks an expected address. `ds` here is the memory
 * store with some blocks hidden from its LISTs (a watch that has not delivered them); `authority`
 * the store itself; `written` what the test says our writes did (the agent's view records it).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryDatastore, withBlocks } from 'blockipam/core';
import type { IPAMBlock, ListOptions } from 'blockipam/core';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import type { AddOutcome } from 'blockipam/core/node-ipam';
import { ipamCalls } from '../helpers/ipam-calls.ts';
import { pool } from './fixtures.ts';

const NODE = 'n1';
const { attachment, addCall } = ipamCalls(NODE);
const sig = (): AbortSignal => AbortSignal.timeout(5_000);
const T = '2026-01-01T00:00:00Z';

function setup() {
  const memory = new MemoryDatastore({
    pools: [
      pool('v4', { cidr: '10.70.0.0/16', blockSize: 26 }, T),
      pool('v6', { cidr: 'fd00:70::/112', blockSize: 122 }, T),
    ],
  });
  const hidden = new Set<string>();
  const seen = (b: IPAMBlock): boolean => !hidden.has(b.metadata.name);
  const ds = withBlocks(memory, {
    ...memory.blocks,
    get: (n, o) => memory.blocks.get(n, o),
    listMetadata: (o) => memory.blocks.listMetadata(o),
    listPage: (o) => memory.blocks.listPage(o),
    create: (b, o) => memory.blocks.create(b, o),
    update: (b, o) => memory.blocks.update(b, o),
    delete: (n, p, o) => memory.blocks.delete(n, p, o),
    list: async (o?: ListOptions) => (await memory.blocks.list(o)).filter(seen),
  });
  const asked = { lists: 0 };
  const authority = withBlocks(memory, {
    ...ds.blocks,
    list: (o?: ListOptions) => {
      asked.lists += 1;
      return memory.blocks.list(o);
    },
  });
  const written = new Map<string, string[]>();
  const ipam = createNodeIpam({
    ds,
    authority,
    written: (handle) => written.get(handle),
    inputs: datastoreInputs(memory),
  });
  const held = async (): Promise<string[]> =>
    (await memory.blocks.list()).flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle));
  return { memory, hidden, asked, ipam, held, written };
}

const addressesOf = (out: AddOutcome): string[] =>
  out.kind === 'allocated' ? out.ips.map((ip) => ip.address.split('/')[0] ?? '') : [];

describe('node IPAM service: when the lagging ds answers alone', () => {
  test('its own dual-stack handle, found whole: no LIST at the authority', async () => {
    const { asked, ipam, held, written } = setup();
    const ips = addressesOf(await ipam.add(addCall('a', [4, 6]), sig()));
    assert.equal(ips.length, 2);
    written.set('net.a.eth0', ips);
    assert.deepEqual(await ipam.del({ attachment: attachment('a'), node: NODE }, sig()), { released: 2 });
    assert.deepEqual([asked.lists, (await held()).length], [0, 0]);
    // kubelet's second DEL: released lately, ds finds nothing
    written.set('net.a.eth0', []);
    assert.deepEqual(await ipam.del({ attachment: attachment('a'), node: NODE }, sig()), { released: 0 });
    assert.equal(asked.lists, 0);
  });

  test('its own handle, ds holding only part of it: the rest released through the authority', async () => {
    const { memory, hidden, asked, ipam, held, written } = setup();
    const ips = addressesOf(await ipam.add(addCall('b', [4, 6]), sig()));
    assert.equal(ips.length, 2);
    written.set('net.b.eth0', ips);
    for (const b of await memory.blocks.list()) if (b.spec.cidr.includes(':')) hidden.add(b.metadata.name);
    assert.deepEqual(await ipam.del({ attachment: attachment('b'), node: NODE }, sig()), { released: 2 });
    assert.deepEqual([asked.lists, (await held()).length], [1, 0]);
  });

  test('a handle another writer allocated, found whole in ds: released through the authority', async () => {
    const { memory, asked, ipam, held } = setup();
    const other = createNodeIpam({ ds: memory, inputs: datastoreInputs(memory) });
    assert.equal(addressesOf(await other.add(addCall('c', [4, 6]), sig())).length, 2);
    assert.deepEqual(await ipam.del({ attachment: attachment('c'), node: NODE }, sig()), { released: 2 });
    assert.deepEqual([asked.lists, (await held()).length], [1, 0]);
  });

  test('a handle released lately that ds finds again (written since): confirmed', async () => {
    const { memory, hidden, asked, ipam, held, written } = setup();
    assert.equal(addressesOf(await ipam.add(addCall('d', [4, 6]), sig())).length, 2);
    assert.deepEqual(await ipam.del({ attachment: attachment('d'), node: NODE }, sig()), { released: 2 });
    written.set('net.d.eth0', []); // what our release wrote
    asked.lists = 0;
    // another writer allocates the handle again; ds sees only its IPv4 block
    const other = createNodeIpam({ ds: memory, inputs: datastoreInputs(memory) });
    assert.equal(addressesOf(await other.add(addCall('d', [4, 6]), sig())).length, 2);
    for (const b of await memory.blocks.list()) if (b.spec.cidr.includes(':')) hidden.add(b.metadata.name);
    assert.deepEqual(await ipam.del({ attachment: attachment('d'), node: NODE }, sig()), { released: 2 });
    assert.deepEqual([asked.lists, (await held()).length], [1, 0]);
  });

  test('CHECK looks again when ds lacks an expected address', async () => {
    const { memory, hidden, asked, ipam } = setup();
    const ips = addressesOf(await ipam.add(addCall('e', [4, 6]), sig()));
    const check = { attachment: attachment('e'), node: NODE, expectedIPs: ips };
    assert.deepEqual(await ipam.check(check, sig()), { kind: 'ok' });
    assert.equal(asked.lists, 0, 'found whole: no LIST');
    for (const b of await memory.blocks.list()) if (b.spec.cidr.includes(':')) hidden.add(b.metadata.name);
    assert.deepEqual(await ipam.check(check, sig()), { kind: 'ok' });
    assert.equal(asked.lists, 1);
  });
});

/**
 * ADD and DEL beside host-local's store (netconf ipam.hostLocalStore, core/cni/host-local-store.ts),
 * in-process over the memory datastore with a real store directory: no address a file holds for
 * another container is handed out, each address handed out gets host-local's file, a host-local
 * ADD that wins the race for an address makes the ADD take another, a DEL removes the container's
 * files and nobody else's.
 */
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { createCoreBackend } from '../../ipam-plugin/backend/core-backend.ts';
import type { Backend } from '../../ipam-plugin/backend/port.ts';
import { readStore, releaseFromStore, reserveInStore } from 'blockipam/core/cni';
import { baseEnv, invoke, netconf } from './helpers/run-dispatch.ts';
import { pool } from '../core/fixtures.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-host-local-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let store = '';
let n = 0;
beforeEach(() => {
  store = join(tmp, `store-${++n}`);
  mkdirSync(store);
  writeFileSync(join(store, 'lock'), '');
  writeFileSync(join(store, 'last_reserved_ip.0'), '10.50.0.4');
});

// One /29 block: ordinals 2-6 assignable (0, 1 and 7 reserved, as host-local's .0, gateway .1, broadcast)
const world = (): MemoryDatastore =>
  new MemoryDatastore({
    pools: [pool('p', { cidr: '10.50.0.0/29', blockSize: 29 }, '2026-01-01T00:00:00Z')],
  });
const conf = (): string => netconf('1.0.0', { cacheDir: tmp, hostLocalStore: store });
const hold = (address: string, containerID: string): void =>
  writeFileSync(join(store, address), `${containerID}\r\neth0`);
const files = (): Record<string, string> =>
  Object.fromEntries(readdirSync(store).map((f) => [f, readFileSync(join(store, f), 'utf8')]));
const allocated = async (ds: MemoryDatastore): Promise<string[]> =>
  (await ds.blocks.list()).flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle));
const addressOf = (json: Record<string, unknown> | undefined): string =>
  String((json?.ips as { address: string }[] | undefined)?.[0]?.address).split('/')[0] ?? '';

describe('ADD beside host-local', () => {
  it('takes no address a file holds, and reserves the one it hands out in host-local’s format', async () => {
    const ds = world();
    for (const [a, c] of [
      ['10.50.0.2', 'old-a'],
      ['10.50.0.3', 'old-b'],
      ['10.50.0.4', 'old-c'],
    ])
      hold(a!, c!);
    writeFileSync(join(store, '10.50.0.6'), ''); // being written by host-local: held
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.equal(r.code, 0, r.stdout);
    assert.equal(addressOf(r.json), '10.50.0.5');
    assert.equal(files()['10.50.0.5'], 'ctr1\r\neth0');
    assert.equal(files()['10.50.0.2'], 'old-a\r\neth0');
  });

  it('every free address held by host-local: exhausted (code 101), nothing allocated, no file written', async () => {
    const ds = world();
    for (const last of [2, 3, 4, 5, 6]) hold(`10.50.0.${last}`, `old-${last}`);
    const before = files();
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.equal(r.json?.code, 101, r.stdout);
    assert.deepEqual(await allocated(ds), []);
    assert.deepEqual(files(), before);
  });

  it('a host-local ADD that takes the address first: released, and the next free one taken', async () => {
    const ds = world();
    const core = createCoreBackend({ ds });
    let raced = 0;
    // host-local creates the file for the address blockipam just allocated, before blockipam's reservation
    const racing: Backend = {
      ...core,
      ipam: {
        ...core.ipam,
        add: async (call, signal) => {
          const outcome = await core.ipam.add(call, signal);
          if (outcome.kind === 'allocated' && raced++ === 0)
            hold(outcome.ips[0]!.address.split('/')[0]!, 'racer');
          return outcome;
        },
      },
    };
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), racing);
    assert.equal(r.code, 0, r.stdout);
    const lost = Object.entries(files()).find(([, c]) => c === 'racer\r\neth0')?.[0];
    assert.ok(lost, 'the racer’s file stays');
    assert.notEqual(addressOf(r.json), lost);
    assert.equal(files()[addressOf(r.json)], 'ctr1\r\neth0');
    assert.deepEqual(await allocated(ds), ['net1.ctr1.eth0'], 'the lost address was released');
    assert.equal(raced, 2);
  });

  it('a static address host-local holds for another container: code 102 naming the store, nothing left', async () => {
    const ds = world();
    hold('10.50.0.3', 'old-b');
    const r = await invoke(
      { ...baseEnv, CNI_COMMAND: 'ADD', CNI_ARGS: 'IP=10.50.0.3' },
      conf(),
      createCoreBackend({ ds }),
    );
    assert.equal(r.json?.code, 102, r.stdout);
    assert.match(String(r.json?.details), /10\.50\.0\.3 held in host-local's store .* by another container/);
    assert.deepEqual(await allocated(ds), []);
    assert.equal(files()['10.50.0.3'], 'old-b\r\neth0');
  });

  it('a store directory that cannot be written: the error, and the allocation released', async () => {
    const ds = world();
    rmSync(store, { recursive: true });
    writeFileSync(store, 'not a directory');
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.notEqual(r.code, 0);
    assert.deepEqual(await allocated(ds), []);
  });
});

describe('odd stores', () => {
  it('a store directory not there yet (a rebooted node’s tmpfs): created, as host-local does', async () => {
    const ds = world();
    rmSync(store, { recursive: true });
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.equal(r.code, 0, r.stdout);
    assert.equal(files()[addressOf(r.json)], 'ctr1\r\neth0');
  });

  it('entries that are no regular file are held by someone unknown: never opened, never handed out', async () => {
    const ds = world();
    for (const last of [2, 3]) mkdirSync(join(store, `10.50.0.${last}`));
    symlinkSync('/dev/zero', join(store, '10.50.0.4')); // read through, it would never end
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.equal(r.code, 0, r.stdout);
    assert.equal(addressOf(r.json), '10.50.0.5');
    assert.doesNotMatch(r.stderr, /trying again/, 'no round lost to them');
  });
});

describe('DEL beside host-local', () => {
  it('releases the allocation and the container’s file, nobody else’s; an old-format file counts', async () => {
    const ds = world();
    hold('10.50.0.2', 'old-a');
    const add = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD' }, conf(), createCoreBackend({ ds }));
    assert.equal(add.code, 0, add.stdout);
    writeFileSync(join(store, '10.50.0.6'), 'ctr1'); // the old format: the container ID alone
    const del = await invoke({ ...baseEnv, CNI_COMMAND: 'DEL' }, conf(), createCoreBackend({ ds }));
    assert.equal(del.code, 0, del.stdout);
    assert.deepEqual(await allocated(ds), []);
    assert.deepEqual(Object.keys(files()).sort(), ['10.50.0.2', 'last_reserved_ip.0', 'lock']);
  });

  it('a store that cannot be read does not fail the DEL', async () => {
    const ds = world();
    rmSync(store, { recursive: true });
    writeFileSync(store, 'not a directory');
    const del = await invoke({ ...baseEnv, CNI_COMMAND: 'DEL' }, conf(), createCoreBackend({ ds }));
    assert.equal(del.code, 0, del.stdout);
  });
});

describe('the store', () => {
  it('reads both formats, skips lock and cursor, marks an empty file held by no one known', async () => {
    hold('10.50.0.2', 'a');
    writeFileSync(join(store, '10.50.0.3'), 'b');
    writeFileSync(join(store, '10.50.0.4'), '');
    assert.deepEqual([...(await readStore(store))].sort(), [
      ['10.50.0.2', { containerID: 'a', ifname: 'eth0' }],
      ['10.50.0.3', { containerID: 'b', ifname: 'eth0' }],
      ['10.50.0.4', undefined],
    ]);
    assert.deepEqual([...(await readStore(join(tmp, 'missing')))], []);
  });

  it('a reservation repeated by the same attachment is no clash; one clash undoes this call’s files', async () => {
    assert.deepEqual(await reserveInStore(store, ['10.50.0.2'], 'c', 'eth0'), []);
    assert.deepEqual(await reserveInStore(store, ['10.50.0.2'], 'c', 'eth0'), []);
    hold('10.50.0.4', 'other');
    assert.deepEqual(await reserveInStore(store, ['10.50.0.3', '10.50.0.4'], 'd', 'eth0'), ['10.50.0.4']);
    assert.equal(files()['10.50.0.3'], undefined, 'the file made for the other address is gone again');
    assert.deepEqual(await releaseFromStore(store, 'c', 'eth0'), ['10.50.0.2']);
    assert.deepEqual(await releaseFromStore(store, 'c', 'eth1'), []);
    // a name in another spelling of its address: the entry itself goes
    writeFileSync(join(store, 'FD00:0:0:0::5'), 'e\r\neth0');
    assert.deepEqual(await releaseFromStore(store, 'e', 'eth0'), ['fd00::5']);
    assert.ok(!readdirSync(store).includes('FD00:0:0:0::5'));
  });
});

/**
 * The backend on core's allocator over the memory datastore: annotations steer pool and static
 * address, the uncontended path reads the affine blocks once (prefetched), a stale prefetch
 * still yields unique addresses (compare-and-swap), duplicate ADD, DEL, CHECK, GC, STATUS.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isConflict, MemoryDatastore, type IPPool } from 'blockipam/core';
import type { AddRequest, Backend } from '../../../ipam-plugin/backend/port.ts';
import { createCoreBackend } from '../../../ipam-plugin/backend/core-backend.ts';
import { parseNetConf, type NetConf } from '../../../ipam-plugin/cni/netconf.ts';
import { baseEnv, invoke, netconf } from '../helpers/run-dispatch.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-core-backend-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const pool = (name: string, cidr: string, extra: Partial<IPPool['spec']> = {}): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name, creationTimestamp: `2026-01-0${name.length % 9}T00:00:00Z` },
  spec: { cidr, blockSize: 26, ...extra },
});

function setup(seedPods = true): { ds: MemoryDatastore; conf: NetConf; backend: Backend } {
  const ds = new MemoryDatastore({
    pools: [pool('auto', '10.50.0.0/16'), pool('manual', '10.60.0.0/16', { assignmentMode: 'Manual' })],
    namespaces: [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'ns1', annotations: { 'ipam.blockipam.io/ippools': '["manual"]' } },
      },
    ],
    pods: seedPods
      ? [
          { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p1', namespace: 'ns1', uid: 'uid-p1' } },
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'elsewhere', namespace: 'ns1', uid: 'uid-e' },
            spec: { nodeName: 'node-2' },
          },
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: 'p2',
              namespace: 'ns1',
              uid: 'uid-p2',
              annotations: { 'ipam.blockipam.io/ip-addrs': '["10.60.7.7"]' },
            },
          },
        ]
      : [],
  });
  const conf = parseNetConf(
    JSON.stringify({
      cniVersion: '1.1.0',
      name: 'n',
      ipam: { type: 'blockipam', nodeName: 'node-1', cacheDir: join(tmp, String(Math.random())) },
    }),
  );
  return { ds, conf, backend: createCoreBackend({ ds, conf, cacheKey: 'test' }) };
}

function req(id: string, extra: Partial<AddRequest> = {}): AddRequest {
  return {
    attachment: { network: 'n', containerID: id, ifname: 'eth0' },
    node: 'node-1',
    families: [4],
    pools: { 4: [], 6: [] },
    staticIPs: [],
    critical: (step) => step(AbortSignal.timeout(10_000), false),
    lockFree: () => Promise.resolve(true),
    ...extra,
  };
}
const address = (o: Awaited<ReturnType<Backend['add']>>): string =>
  o.kind === 'allocated' ? (o.ips[0]?.address ?? '') : o.kind;

void describe('core backend (memory datastore)', () => {
  void it('namespace annotation picks the Manual pool; pod annotation gives the static address', async () => {
    const { backend } = setup();
    assert.match(
      address(await backend.add(req('a', { pod: { namespace: 'ns1', name: 'p1' } }))),
      /^10\.60\./,
    );
    assert.equal(
      address(await backend.add(req('b', { pod: { namespace: 'ns1', name: 'p2' } }))),
      '10.60.7.7/26',
    );
    assert.match(address(await backend.add(req('c'))), /^10\.50\.\d+\.\d+\/26$/);
  });
  void it('a free lock: the affine blocks are listed once (prefetched); a busy lock: listed under the lock', async () => {
    const { ds, conf, backend } = setup();
    await backend.add(req('warm'));
    let lists = 0;
    const orig = ds.blocks.list.bind(ds.blocks);
    ds.blocks.list = (o) => (lists++, orig(o));
    await backend.add(req('x'));
    assert.equal(lists, 1);
    await backend.add(req('y', { lockFree: () => Promise.resolve(false) }));
    assert.equal(lists, 2);
    const waited = {
      critical: <T>(step: (s: AbortSignal, w: boolean) => Promise<T>) =>
        step(AbortSignal.timeout(10_000), true),
    };
    await backend.add(req('z', waited));
    assert.equal(
      lists,
      3,
      'a prefetch made while another holder ran is not used: the holder before handed its blocks off',
    );
    rmSync(`${conf.lockFile}.handoff.json`);
    await backend.add(req('z2', waited));
    assert.equal(lists, 5, 'nor without a hand-off: core lists again');
  });
  void it('a prefetched LIST made stale by another writer still gives unique, stored addresses', async () => {
    const { ds, backend } = setup();
    await backend.add(req('warm'));
    const other = createCoreBackend({
      ds,
      conf: parseNetConf(
        JSON.stringify({
          cniVersion: '1.1.0',
          name: 'n',
          ipam: { type: 'blockipam', nodeName: 'node-1', cacheDir: join(tmp, 'o') },
        }),
      ),
      cacheKey: 't',
    });
    // Another ADD writes the block after r1's prefetched LIST and before r1's critical step.
    const racing = req('r1', {
      critical: async (step) => {
        await other.add(req('r2'));
        return step(AbortSignal.timeout(10_000), false);
      },
    });
    let conflicts = 0;
    const update = ds.blocks.update.bind(ds.blocks);
    ds.blocks.update = (o) =>
      update(o).catch((e: unknown) => {
        if (isConflict(e)) conflicts++;
        throw e;
      });
    const [a, b] = [address(await backend.add(racing)), address(await other.add(req('r3')))];
    assert.equal(conflicts, 1, 'the stale prefetch cost exactly one compare-and-swap conflict');
    const stored = (await ds.blocks.list()).flatMap((bl) =>
      Object.values(bl.spec.allocations).map((al) => al.handle),
    );
    assert.ok(a.startsWith('10.50.') && b.startsWith('10.50.'));
    assert.deepEqual(stored.sort(), ['n.r1.eth0', 'n.r2.eth0', 'n.r3.eth0', 'n.warm.eth0']);
  });
  void it('duplicate ADD is refused and changes nothing; DEL releases; CHECK sees it', async () => {
    const { backend } = setup();
    const first = address(await backend.add(req('d')));
    assert.equal((await backend.add(req('d'))).kind, 'duplicate');
    const att = { network: 'n', containerID: 'd', ifname: 'eth0' };
    assert.deepEqual(await backend.check(att, [first.split('/')[0] as string]), { kind: 'ok' });
    assert.equal((await backend.check(att, ['10.99.9.9'])).kind, 'mismatch');
    assert.equal(
      await backend.del({ attachment: att, node: 'node-1', signal: AbortSignal.timeout(1000) }),
      1,
    );
    assert.equal((await backend.check(att, [])).kind, 'missing');
  });
  void it("GC releases this network's stale allocations on this node only", async () => {
    const { backend } = setup();
    for (const id of ['g1', 'g2']) await backend.add(req(id));
    const out = await backend.gc({
      network: 'n',
      node: 'node-1',
      validAttachments: [{ containerID: 'g1', ifname: 'eth0' }],
      signal: AbortSignal.timeout(1000),
    });
    assert.deepEqual(out.released, ['n.g2.eth0']);
  });
  void it('STATUS: available, and unavailable for a pool with no room', async () => {
    const { backend } = setup();
    assert.deepEqual(await backend.status('node-1', [4], { 4: [], 6: [] }), { kind: 'ready' });
    assert.equal((await backend.status('node-1', [6], { 4: [], 6: [] })).kind, 'notReady');
  });
  void it("a pod named without K8S_POD_UID is recorded without a UID, not the pod object's", async () => {
    const { ds, backend } = setup();
    assert.equal(
      (await backend.add(req('nouid', { pod: { namespace: 'ns1', name: 'p1' } }))).kind,
      'allocated',
    );
    const a = (await ds.blocks.list())
      .flatMap((b) => Object.values(b.spec.allocations))
      .find((x) => x.handle === 'n.nouid.eth0');
    assert.equal(a?.pod, 'p1');
    assert.equal(a?.podUID, undefined);
  });
  void it('DEL with K8S_POD_UID leaves an allocation of another pod UID; the matching UID releases it', async () => {
    const { backend } = setup();
    const pod = { namespace: 'ns1', name: 'p1', uid: 'uid-p1' };
    assert.equal((await backend.add(req('u', { pod }))).kind, 'allocated');
    const att = { network: 'n', containerID: 'u', ifname: 'eth0' };
    const signal = AbortSignal.timeout(1000);
    assert.equal(await backend.del({ attachment: att, node: 'node-1', podUID: 'uid-other', signal }), 0);
    assert.equal((await backend.check(att, [])).kind, 'ok');
    assert.equal(await backend.del({ attachment: att, node: 'node-1', podUID: 'uid-p1', signal }), 1);
  });
  void it('a pod scheduled on another node: ADD refused naming both nodes and ipam.nodeName, nothing allocated', async () => {
    const { ds, backend } = setup();
    const out = await backend.add(req('wn', { pod: { namespace: 'ns1', name: 'elsewhere', uid: 'uid-e' } }));
    assert.equal(out.kind, 'misconfigured');
    const message = out.kind === 'misconfigured' ? out.message : '';
    assert.match(message, /"node-2"/);
    assert.match(message, /"node-1"/);
    assert.match(message, /ipam\.nodeName/);
    assert.equal((await ds.blocks.list()).flatMap((b) => Object.values(b.spec.allocations)).length, 0);
  });
  void it('ip-addrs takes bare addresses (as Calico ipAddrs): a prefix length is CNI code 104 naming the annotation', async () => {
    const cases: [string, number, RegExp][] = [
      // a bare address: allocated as asked
      ['10.60.7.8', 0, /"address":"10\.60\.7\.8\/26"/],
      // with a prefix length: refused, the value and the annotation named, nothing allocated
      [
        '10.60.7.9/26',
        104,
        /ipam\.blockipam\.io\/ip-addrs: \\"10\.60\.7\.9\/26\\" is not an IP address \(write the bare address, without a prefix length\)/,
      ],
      // IPv6 the same
      ['fd00::9/64', 104, /ip-addrs: \\"fd00::9\/64\\" is not an IP address \(write the bare address/],
    ];
    for (const [value, code, output] of cases) {
      const ds = new MemoryDatastore({
        pools: [pool('manual', '10.60.0.0/16', { assignmentMode: 'Manual' })],
        pods: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: 'p',
              namespace: 'ns1',
              uid: 'u',
              annotations: { 'ipam.blockipam.io/ip-addrs': `["${value}"]` },
            },
          },
        ],
      });
      const stdin = netconf('1.1.0', { nodeName: 'node-1', cacheDir: join(tmp, String(Math.random())) });
      const conf = parseNetConf(stdin);
      const r = await invoke(
        { ...baseEnv, CNI_COMMAND: 'ADD', CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p' },
        stdin,
        createCoreBackend({ ds, conf, cacheKey: 'test' }),
      );
      assert.equal(r.code === 0 ? 0 : r.json?.code, code, `${value}: ${r.stdout}`);
      assert.match(r.stdout, output, value);
      if (code !== 0) assert.equal((await ds.blocks.list()).length, 0, `${value}: nothing allocated`);
    }
  });
});

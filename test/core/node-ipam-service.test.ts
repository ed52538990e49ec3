/**
 * The node IPAM service (core/node-ipam/service.ts) over the memory datastore: each rule the
 * plugin and the agent share — pod context and annotations, static IPs, pool choice with the
 * namespaceSelector, dual-stack all-or-nothing, node mismatch, idempotence, DEL's pod-UID guard,
 * CHECK, GC, STATUS, the inputs passed into core, and the signal.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryDatastore, loadSnapshot, type IPPool, type Pod } from 'blockipam/core';
import {
  createNodeIpam,
  datastoreInputs,
  type AddCall,
  type AddOutcome,
  type NodeInputs,
} from 'blockipam/core/node-ipam';

const pool = (name: string, cidr: string, extra: Partial<IPPool['spec']> = {}, day = 1): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name, creationTimestamp: `2026-01-0${day}T00:00:00Z` },
  spec: { cidr, blockSize: cidr.includes(':') ? 126 : 26, ...extra },
});

const podObject = (name: string, extra: Partial<Pod> = {}, annotations?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns1', uid: `uid-${name}`, ...(annotations ? { annotations } : {}) },
  spec: { nodeName: 'node-1' },
  ...extra,
});

/** Pools: auto (10.50/16), manual (10.60/16, Manual), tenant (10.70/16, Manual, team=a only), v6 (one /126). */
function setup(o: { nsAnnotations?: Record<string, string>; pods?: Pod[] } = {}) {
  const ds = new MemoryDatastore({
    pools: [
      pool('auto', '10.50.0.0/16'),
      pool('manual', '10.60.0.0/16', { assignmentMode: 'Manual' }, 2),
      pool(
        'tenant',
        '10.70.0.0/16',
        { assignmentMode: 'Manual', namespaceSelector: { matchLabels: { team: 'a' } } },
        3,
      ),
      pool('v6', 'fd00::/126', {}, 4),
    ],
    reservations: [{ metadata: { name: 'r' }, spec: { reservedCIDRs: ['10.60.9.0/24'] } }],
    namespaces: [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'ns1', labels: { team: 'b' }, annotations: o.nsAnnotations ?? {} },
      },
    ],
    nodes: [{ metadata: { name: 'node-1', labels: { zone: 'z1' } } }],
    pods: o.pods ?? [podObject('p1')],
  });
  return { ds, ipam: createNodeIpam({ ds, inputs: datastoreInputs(ds) }) };
}

const signal = (): AbortSignal => AbortSignal.timeout(10_000);

function addCall(id: string, extra: Partial<AddCall> = {}): AddCall {
  return {
    attachment: { network: 'n', containerID: id, ifname: 'eth0' },
    node: 'node-1',
    families: [4],
    pools: { 4: [], 6: [] },
    staticIPs: [],
    ...extra,
  };
}
const attachment = (id: string) => ({ network: 'n', containerID: id, ifname: 'eth0' });
const pod1 = { namespace: 'ns1', name: 'p1', uid: 'uid-p1' };

/** The addresses of an outcome ("10.50.0.2/26"), or its kind and message. */
const shown = (o: AddOutcome): string =>
  o.kind === 'allocated' ? o.ips.map((i) => i.address).join(' ') : `${o.kind}: ${o.message}`;

/** Every stored allocation, by handle. */
async function allocations(ds: MemoryDatastore) {
  return (await ds.blocks.list()).flatMap((b) => Object.values(b.spec.allocations));
}

void describe('node IPAM service: ADD', () => {
  void it('allocates with the block prefix and gateway, recording the pod and node', async () => {
    const { ds, ipam } = setup();
    const out = await ipam.add(addCall('a', { pod: pod1 }), signal());
    assert.equal(out.kind, 'allocated');
    assert.match(shown(out), /^10\.50\.\d+\.\d+\/26$/);
    assert.match(out.kind === 'allocated' ? (out.ips[0]?.gateway ?? '') : '', /^10\.50\.\d+\.\d+$/);
    const [a] = await allocations(ds);
    assert.deepEqual(
      [a?.handle, a?.node, a?.namespace, a?.pod, a?.podUID],
      ['n.a.eth0', 'node-1', 'ns1', 'p1', 'uid-p1'],
    );
  });

  void it('a second ADD of a live attachment is a duplicate and leaves the first untouched', async () => {
    const { ds, ipam } = setup();
    const first = await ipam.add(addCall('d'), signal());
    const before = await ds.blocks.list();
    const writes = ds.stats.writes;
    const again = await ipam.add(addCall('d'), signal());
    assert.equal(again.kind, 'duplicate');
    assert.match(shown(again), /n\.d\.eth0/);
    assert.equal(ds.stats.writes, writes, 'nothing written');
    assert.deepEqual(await ds.blocks.list(), before);
    assert.equal(first.kind, 'allocated');
  });

  void it('static IPs: the call’s win over the annotation; taken, reserved, outside are refused', async () => {
    const cases: [string, Partial<AddCall>, RegExp][] = [
      // free, in a pool: allocated as asked (the Manual pool serves a named address)
      ['ok', { staticIPs: ['10.60.7.7'], staticIPsFrom: 'runtimeConfig.ips' }, /^10\.60\.7\.7\/26$/],
      // the call's address wins over the pod annotation's
      [
        'call wins',
        { staticIPs: ['10.60.7.8'], pod: { namespace: 'ns1', name: 'annotated' } },
        /^10\.60\.7\.8\/26$/,
      ],
      // the annotation's, when the call names none
      ['annotation', { pod: { namespace: 'ns1', name: 'annotated' } }, /^10\.60\.7\.9\/26$/],
      // taken by another handle (seeded below): refused, named by the field it came from
      [
        'taken',
        { staticIPs: ['10.60.7.5'], staticIPsFrom: 'runtimeConfig.ips' },
        /^addressRefused: runtimeConfig\.ips: Taken: /,
      ],
      // a block's gateway (ordinal 1) is reserved
      [
        'gateway',
        { staticIPs: ['10.60.7.1'], staticIPsFrom: 'CNI_ARGS IP' },
        /^addressRefused: CNI_ARGS IP: Reserved: /,
      ],
      // inside an IPReservation
      [
        'IPReservation',
        { staticIPs: ['10.60.9.9'], staticIPsFrom: 'args.cni.ips' },
        /^addressRefused: args\.cni\.ips: Reserved: /,
      ],
      // outside every pool
      [
        'outside',
        { staticIPs: ['192.0.2.9'], staticIPsFrom: 'runtimeConfig.ips' },
        /^addressRefused: runtimeConfig\.ips: NotInPool: /,
      ],
      // without staticIPsFrom: core's message alone
      ['no from', { staticIPs: ['192.0.2.9'] }, /^addressRefused: NotInPool: /],
      // refused from the annotation: the annotation is named
      [
        'annotation refused',
        { pod: { namespace: 'ns1', name: 'annotated-taken' } },
        /^addressRefused: pod annotation ipam\.blockipam\.io\/ip-addrs: Taken: /,
      ],
    ];
    const { ds, ipam } = setup({
      pods: [
        podObject('annotated', {}, { 'ipam.blockipam.io/ip-addrs': '["10.60.7.9"]' }),
        podObject('annotated-taken', {}, { 'ipam.blockipam.io/ip-addrs': '["10.60.7.5"]' }),
      ],
    });
    assert.equal(
      (await ipam.add(addCall('holder', { staticIPs: ['10.60.7.5'] }), signal())).kind,
      'allocated',
    );
    for (const [name, extra, expected] of cases) {
      const before = (await allocations(ds)).length;
      const out = await ipam.add(addCall(name.replace(/ /g, '-'), extra), signal());
      assert.match(shown(out), expected, name);
      if (out.kind !== 'allocated')
        assert.equal((await allocations(ds)).length, before, `${name}: nothing allocated`);
    }
  });

  void it('pools by annotation: namespace default, pod override, runtime annotations first, namespaceSelector enforced', async () => {
    const { ipam } = setup({
      nsAnnotations: { 'ipam.blockipam.io/ippools': '["manual"]' },
      pods: [
        podObject('plain'),
        podObject('override', {}, { 'ipam.blockipam.io/ippools': '["auto"]' }),
        podObject('tenant', {}, { 'ipam.blockipam.io/ippools': '["tenant"]' }),
      ],
    });
    const on = (name: string, extra: Partial<AddCall> = {}) =>
      ipam.add(addCall(name, { pod: { namespace: 'ns1', name }, ...extra }), signal()).then(shown);
    // the namespace's annotation is its pods' default
    assert.match(await on('plain'), /^10\.60\./);
    // the pod's annotation overrides it
    assert.match(await on('override'), /^10\.50\./);
    // the runtime's copy of the pod annotations wins over the pod object's
    assert.match(
      await ipam
        .add(
          addCall('runtime', {
            pod: { namespace: 'ns1', name: 'override' },
            podAnnotations: { 'ipam.blockipam.io/ippools': '["manual"]' },
          }),
          signal(),
        )
        .then(shown),
      /^10\.60\./,
    );
    // a pool whose namespaceSelector does not admit ns1 (team=b) is refused, naming the annotation
    assert.equal(
      await on('tenant'),
      'rejected: pod annotation ipam.blockipam.io/ippools: requested IP pool "tenant" does not allow namespace "ns1" (namespaceSelector). Next step: request a pool whose namespaceSelector matches the namespace, or label the namespace to match.',
    );
    // a refused pool from the netconf names the netconf's lists
    assert.match(
      await ipam.add(addCall('conf', { pools: { 4: ['nope'], 6: [] } }), signal()).then(shown),
      /^rejected: ipam\.ipv4Pools \/ ipam\.ipv6Pools: /,
    );
  });

  void it('a malformed annotation is rejected naming it; nothing is allocated', async () => {
    const cases: [string, Record<string, string>, Record<string, string>, string][] = [
      // pod pools not a JSON list
      [
        'pod pools',
        { 'ipam.blockipam.io/ippools': 'manual' },
        {},
        'pod annotation ipam.blockipam.io/ippools is not a JSON list of strings',
      ],
      // namespace pools not a JSON list
      [
        'ns pools',
        {},
        { 'ipam.blockipam.io/ippools': '{}' },
        'namespace annotation ipam.blockipam.io/ippools is not a JSON list of strings',
      ],
      // ip-addrs with a prefix length
      [
        'prefix',
        { 'ipam.blockipam.io/ip-addrs': '["10.60.7.9/26"]' },
        {},
        'pod annotation ipam.blockipam.io/ip-addrs: "10.60.7.9/26" is not an IP address (write the bare address, without a prefix length)',
      ],
    ];
    for (const [name, podAnn, nsAnn, message] of cases) {
      const { ds, ipam } = setup({ nsAnnotations: nsAnn, pods: [podObject('p', {}, podAnn)] });
      const out = await ipam.add(addCall('m', { pod: { namespace: 'ns1', name: 'p' } }), signal());
      assert.deepEqual(out, { kind: 'rejected', message }, name);
      assert.equal((await allocations(ds)).length, 0, name);
    }
  });

  void it('a pod the API server does not know: allocated without a pod reference, podNotFound', async () => {
    const { ds, ipam } = setup();
    const out = await ipam.add(
      addCall('ghost', { pod: { namespace: 'ns1', name: 'ghost', uid: 'u' } }),
      signal(),
    );
    assert.equal(out.kind === 'allocated' && out.podNotFound, true);
    const [a] = await allocations(ds);
    assert.equal(a?.handle, 'n.ghost.eth0');
    assert.equal(a?.pod, undefined);
    assert.equal(a?.podUID, undefined);
  });

  void it('a pod bound to another node: misconfigured with the message naming both, nothing allocated', async () => {
    const { ds, ipam } = setup({ pods: [podObject('away', { spec: { nodeName: 'node-2' } })] });
    const out = await ipam.add(addCall('w', { pod: { namespace: 'ns1', name: 'away' } }), signal());
    assert.deepEqual(out, {
      kind: 'misconfigured',
      message:
        'pod ns1/away runs on node "node-2", but this plugin\'s node name is "node-1" (ipam.nodeName, default the host name in lower case): set ipam.nodeName to the name of this host\'s Node object',
    });
    assert.equal((await allocations(ds)).length, 0);
  });

  void it('dual-stack: both families, or none (a full IPv6 pool rolls the IPv4 address back)', async () => {
    const { ds, ipam } = setup();
    const both = await ipam.add(addCall('ds1', { families: [4, 6] }), signal());
    assert.match(shown(both), /^10\.50\.\d+\.\d+\/26 fd00::[23]\/126$/);
    // the /126 pool holds two addresses (ordinals 0 and 1 reserved): fill it
    assert.equal((await ipam.add(addCall('v6', { families: [6] }), signal())).kind, 'allocated');
    const out = await ipam.add(addCall('ds2', { families: [4, 6] }), signal());
    assert.equal(out.kind, 'exhausted', shown(out));
    assert.deepEqual(
      (await allocations(ds)).map((a) => a.handle).sort(),
      ['n.ds1.eth0', 'n.ds1.eth0', 'n.v6.eth0'],
      'ds2 keeps no IPv4 address',
    );
  });

  void it('the snapshot and node labels come from the inputs: a warm ADD is 1 LIST + 1 UPDATE', async () => {
    const { ds } = setup();
    // The pool admits zone=z9 nodes only; the Node object says z1, the inputs say z9.
    const gated = {
      ...pool('gated', '10.80.0.0/16'),
      spec: { cidr: '10.80.0.0/16', blockSize: 26, nodeSelector: { matchLabels: { zone: 'z9' } } },
    };
    const other = new MemoryDatastore({ pools: [gated] });
    const snapshot = await loadSnapshot(other);
    const inputs: NodeInputs = {
      snapshot: () => snapshot,
      nodeLabels: () => ({ zone: 'z9' }),
      pod: () => undefined,
      namespace: () => undefined,
    };
    const ipam = createNodeIpam({ ds, inputs });
    assert.match(shown(await ipam.add(addCall('w1'), signal())), /^10\.80\./);
    const before = { ...ds.stats };
    assert.match(shown(await ipam.add(addCall('w2'), signal())), /^10\.80\./);
    assert.deepEqual([ds.stats.reads - before.reads, ds.stats.writes - before.writes], [1, 1]);
  });

  void it('a pod object of another UID than the runtime’s is read again from the API server', async () => {
    // The watch holds the predecessor of a recreated pod (same name, pool "auto"); the API server
    // has the runtime's pod (pool "manual"), or another successor still (pool "manual" too).
    const { ds } = setup();
    const snapshot = await loadSnapshot(ds);
    const pools = (list: string) => ({ 'ipam.blockipam.io/ippools': JSON.stringify([list]) });
    const old = podObject('p1', {}, pools('auto'));
    const cases: [string, Pod | undefined, string | undefined, RegExp, number][] = [
      // the runtime's UID differs from the watched pod's: the API server's copy decides
      [
        'recreated',
        { ...old, metadata: { ...old.metadata, uid: 'uid-new', annotations: pools('manual') } },
        'uid-new',
        /^10\.60\./,
        1,
      ],
      // the API server's copy differs too: used as a pod GET always was (the newest there is)
      [
        'newer still',
        { ...old, metadata: { ...old.metadata, uid: 'uid-newer', annotations: pools('manual') } },
        'uid-new',
        /^10\.60\./,
        1,
      ],
      // the same UID: the watched pod, no read
      ['same pod', undefined, 'uid-p1', /^10\.50\./, 0],
      // no UID from the runtime: nothing to compare, no read
      ['no uid', undefined, undefined, /^10\.50\./, 0],
    ];
    for (const [name, server, uid, want, reads] of cases) {
      let asked = 0;
      const inputs: NodeInputs = {
        snapshot: () => snapshot,
        nodeLabels: () => ({ zone: 'z1' }),
        pod: () => old,
        podFromServer: () => ((asked += 1), server),
        namespace: (n) => ds.getNamespace(n),
      };
      const ipam = createNodeIpam({ ds, inputs });
      const pod = { namespace: 'ns1', name: 'p1', ...(uid ? { uid } : {}) };
      assert.match(shown(await ipam.add(addCall(`r-${name}`, { pod }), signal())), want, name);
      assert.equal(asked, reads, `${name}: reads from the API server`);
    }
  });
});

void describe('node IPAM service: DEL, CHECK, GC, STATUS', () => {
  void it('DEL releases; a repeated DEL releases nothing; another pod UID is left alone', async () => {
    const { ipam } = setup();
    await ipam.add(addCall('u', { pod: pod1 }), signal());
    const del = (podUID?: string) =>
      ipam.del({ attachment: attachment('u'), node: 'node-1', ...(podUID ? { podUID } : {}) }, signal());
    assert.deepEqual(await del('uid-other'), { released: 0 });
    assert.deepEqual(
      await ipam.check({ attachment: attachment('u'), node: 'node-1', expectedIPs: [] }, signal()),
      { kind: 'ok' },
    );
    assert.deepEqual(await del('uid-p1'), { released: 1 });
    assert.deepEqual(await del(), { released: 0 });
    assert.deepEqual(await ipam.del({ attachment: attachment('never'), node: 'node-1' }, signal()), {
      released: 0,
    });
  });

  void it('CHECK: ok, mismatch naming the stray address, missing naming the handle', async () => {
    const { ipam } = setup();
    const out = await ipam.add(addCall('c'), signal());
    const ip = shown(out).split('/')[0] ?? '';
    const check = (id: string, expectedIPs: string[]) =>
      ipam.check({ attachment: attachment(id), node: 'node-1', expectedIPs }, signal());
    assert.deepEqual(await check('c', [ip]), { kind: 'ok' });
    assert.deepEqual(await check('c', ['10.99.9.9']), {
      kind: 'mismatch',
      message: `prevResult names 10.99.9.9, allocated: ${ip}`,
    });
    assert.deepEqual(await check('x', []), {
      kind: 'missing',
      message: 'no address is allocated to n.x.eth0 on node node-1',
    });
  });

  void it("GC releases this network's allocations on this node that are not valid attachments", async () => {
    const { ds, ipam } = setup();
    for (const id of ['g1', 'g2', 'g3']) await ipam.add(addCall(id), signal());
    await ipam.add(
      { ...addCall('o1'), attachment: { network: 'other', containerID: 'o1', ifname: 'eth0' } },
      signal(),
    );
    await ipam.add(addCall('n2', { node: 'node-2' }), signal());
    const out = await ipam.gc(
      { network: 'n', node: 'node-1', validAttachments: [{ containerID: 'g1', ifname: 'eth0' }] },
      signal(),
    );
    assert.deepEqual(
      { ...out, released: [...out.released].sort() },
      {
        released: ['n.g2.eth0', 'n.g3.eth0'],
        errors: [],
        aliveElsewhere: [],
      },
    );
    assert.deepEqual((await allocations(ds)).map((a) => a.handle).sort(), [
      'n.g1.eth0',
      'n.n2.eth0',
      'other.o1.eth0',
    ]);
  });

  void it('STATUS: ready with room; notReady naming the family without a pool or without room', async () => {
    const { ipam } = setup();
    const status = (families: (4 | 6)[], pools = { 4: [] as string[], 6: [] as string[] }) =>
      ipam.status({ node: 'node-1', families, pools }, signal());
    assert.deepEqual(await status([4, 6]), { kind: 'ready' });
    assert.deepEqual(await status([4], { 4: ['nope'], 6: [] }), {
      kind: 'notReady',
      message: 'no usable IPv4 pool for node node-1',
    });
    for (const id of ['f1', 'f2']) await ipam.add(addCall(id, { families: [6] }), signal());
    assert.deepEqual(await status([6]), {
      kind: 'notReady',
      message: 'IPv6 pools v6 have no free address for node node-1',
    });
  });
});

void describe('node IPAM service: the signal', () => {
  void it('an aborted signal: every operation rejects with its reason and reads or writes nothing', async () => {
    const { ds, ipam } = setup();
    const aborted = AbortSignal.abort(new Error('budget'));
    const before = { ...ds.stats };
    const calls = [
      ipam.add(addCall('a', { pod: pod1 }), aborted),
      ipam.del({ attachment: attachment('a'), node: 'node-1' }, aborted),
      ipam.check({ attachment: attachment('a'), node: 'node-1', expectedIPs: [] }, aborted),
      ipam.gc({ network: 'n', node: 'node-1', validAttachments: [] }, aborted),
      ipam.status({ node: 'node-1', families: [4], pools: { 4: [], 6: [] } }, aborted),
    ];
    for (const c of calls) await assert.rejects(c, /budget/);
    assert.deepEqual(ds.stats, before);
  });

  void it('inputs that do not watch the signal: nothing asked once fired, and a pending read is not waited for', async () => {
    const { ds } = setup();
    const snapshot = await loadSnapshot(ds);
    let asked = 0;
    let answer: (() => void) | undefined;
    // A watch-fed input: it answers when its view is ready, whatever the signal says.
    const inputs: NodeInputs = {
      snapshot: () => {
        asked++;
        if (answer) return snapshot;
        return new Promise((resolve) => (answer = () => resolve(snapshot)));
      },
      nodeLabels: () => (asked++, {}),
      pod: () => (asked++, undefined),
      namespace: () => (asked++, undefined),
    };
    const ipam = createNodeIpam({ ds, inputs });
    await assert.rejects(ipam.add(addCall('early'), AbortSignal.abort(new Error('budget'))), /budget/);
    assert.equal(asked, 0, 'an operation whose signal has fired starts nothing');
    const controller = new AbortController();
    const pending = ipam.add(addCall('late'), controller.signal);
    assert.equal(asked, 2, 'snapshot and node labels asked');
    controller.abort(new Error('budget'));
    await assert.rejects(pending, /budget/, 'rejected while the snapshot is still pending');
    answer?.();
    assert.equal((await ipam.add(addCall('next'), signal())).kind, 'allocated');
    assert.deepEqual(
      (await allocations(ds)).map((a) => a.handle),
      ['n.next.eth0'],
      'the cut ADD allocated nothing once its snapshot came',
    );
  });

  void it('fired after the IPv4 write of a dual-stack ADD: nothing more is written, it rejects at once', async () => {
    const { ds, ipam } = setup();
    await ipam.add(addCall('warm', { families: [4, 6] }), signal()); // both blocks exist now
    const controller = new AbortController();
    const update = ds.blocks.update.bind(ds.blocks);
    let updates = 0;
    ds.blocks.update = async (o, options) => {
      const written = await update(o, options);
      if (++updates === 1) controller.abort(new Error('budget'));
      return written;
    };
    const writes = ds.stats.writes;
    await assert.rejects(ipam.add(addCall('cut', { families: [4, 6] }), controller.signal), /budget/);
    assert.equal(ds.stats.writes - writes, 1, 'the IPv4 write only: no IPv6 write, no rollback');
    // A later dual-stack ADD runs to its end (its reads and writes queue behind anything the cut
    // ADD would still send): the cut one has added nothing meanwhile.
    ds.blocks.update = update;
    assert.equal((await ipam.add(addCall('after', { families: [4, 6] }), signal())).kind, 'allocated');
    const held = (await allocations(ds)).filter((a) => a.handle === 'n.cut.eth0');
    assert.equal(held.length, 1, 'the IPv4 address stays for the runtime’s DEL');
  });
});

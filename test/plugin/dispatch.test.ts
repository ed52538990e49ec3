/**
 * The CNI protocol through the dispatcher, in-process with a fake backend (no API server):
 * envelope, error codes, result shapes per version, DEL/CHECK/GC/STATUS semantics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeBackend } from './helpers/fake-backend.ts';
import { baseEnv, invoke, netconf } from './helpers/run-dispatch.ts';

const ADD = { ...baseEnv, CNI_COMMAND: 'ADD' };

void describe('envelope', () => {
  void it('VERSION echoes a supported request version and lists all versions', async () => {
    const r = await invoke({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}', fakeBackend());
    assert.equal(r.code, 0);
    assert.deepEqual(r.json, {
      cniVersion: '0.4.0',
      supportedVersions: ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });
  void it('VERSION with empty or junk stdin answers with the current version', async () => {
    for (const stdin of ['', 'junk', '{"cniVersion":"9.9.9"}']) {
      const r = await invoke({ CNI_COMMAND: 'VERSION' }, stdin, fakeBackend());
      assert.equal(r.json?.cniVersion, '1.1.0');
    }
  });
  void it('no CNI_COMMAND: about text on stderr, exit 0, stdout empty', async () => {
    const r = await invoke({}, '', fakeBackend());
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /CNI protocol versions supported/);
  });
  const cases: [string, Record<string, string | undefined>, string, number, RegExp?][] = [
    // unknown and lower-case commands
    ['FOO', { ...baseEnv, CNI_COMMAND: 'FOO' }, netconf('1.0.0'), 4, /unknown CNI_COMMAND: FOO/],
    ['add', { ...baseEnv, CNI_COMMAND: 'add' }, netconf('1.0.0'), 4],
    // missing variables are named
    ['no netns', { ...ADD, CNI_NETNS: undefined }, netconf('1.0.0'), 4, /\[CNI_NETNS\]/],
    [
      'no path+ifname',
      { ...ADD, CNI_PATH: '', CNI_IFNAME: undefined },
      netconf('1.0.0'),
      4,
      /CNI_IFNAME,CNI_PATH/,
    ],
    ['bad id', { ...ADD, CNI_CONTAINERID: '-bad id' }, netconf('1.0.0'), 4, /containerID/],
    ['long ifname', { ...ADD, CNI_IFNAME: 'a234567890123456' }, netconf('1.0.0'), 4, /15 bytes/],
    ['junk stdin', ADD, '{not json', 6],
    ['empty stdin', ADD, '', 6],
    [
      'no name',
      ADD,
      JSON.stringify({ cniVersion: '1.0.0', ipam: { type: 'blockipam' } }),
      7,
      /name: required/,
    ],
    ['name a/b', ADD, netconf('1.0.0', {}, { name: 'a/b' }), 7, /name/],
    ['9.9.9', ADD, netconf('9.9.9'), 1, /incompatible/],
    ['no ipam', ADD, JSON.stringify({ cniVersion: '1.0.0', name: 'n' }), 7, /ipam: required/],
    ['unknown ipam field', ADD, netconf('1.0.0', { subnet: '10.0.0.0/31' }), 7, /ipam.subnet: unknown field/],
    [
      'a mode not allowed',
      ADD,
      netconf('1.0.0', { mode: 'turbo' }),
      7,
      /ipam\.mode: "turbo" is not one of "agent", "standalone"/,
    ],
    ['bad route', ADD, netconf('1.0.0', { routes: [{ dst: '10.0.0.0/33' }] }), 7, /ipam.routes\[0\].dst/],
    ['CHECK at 0.3.1', { ...baseEnv, CNI_COMMAND: 'CHECK' }, netconf('0.3.1'), 1, /does not allow CHECK/],
    ['GC at 1.0.0', { CNI_COMMAND: 'GC', CNI_PATH: '/x' }, netconf('1.0.0'), 1, /GC/],
    ['STATUS at 1.0.0', { CNI_COMMAND: 'STATUS' }, netconf('1.0.0'), 1, /STATUS/],
    ['unknown CNI_ARGS', { ...ADD, CNI_ARGS: 'FOO=1' }, netconf('1.0.0'), 4, /unknown args/],
    [
      'two IPv4 statics',
      ADD,
      netconf('1.0.0', {}, { runtimeConfig: { ips: ['10.244.0.9', '10.244.0.10'] } }),
      7,
      /more than one IPv4/,
    ],
  ];
  for (const [name, env, stdin, code, msg] of cases) {
    void it(`error ${name}: code ${code}, one JSON object on stdout, nothing allocated`, async () => {
      const b = fakeBackend();
      const r = await invoke(env, stdin, b);
      assert.equal(r.code, 1);
      assert.equal(r.json?.code, code, r.stdout);
      assert.equal(r.stdout.trim().split('\n').length, 1);
      if (msg) assert.match(`${String(r.json?.msg)} ${String(r.json?.details)}`, msg);
      assert.equal(b.allocations.size, 0);
    });
  }
});

void describe('ADD result shape', () => {
  void it('1.0.0: ips without version, block prefix, gateway, default route', async () => {
    const r = await invoke(ADD, netconf('1.0.0'), fakeBackend());
    assert.equal(r.code, 0);
    assert.deepEqual(r.json, {
      cniVersion: '1.0.0',
      ips: [{ address: '10.244.0.2/26', gateway: '10.244.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
    });
  });
  for (const v of ['0.3.0', '0.3.1', '0.4.0']) {
    void it(`${v}: ips carry version`, async () => {
      const r = await invoke(ADD, netconf(v, { assignIPv6: true }), fakeBackend());
      const ips = r.json?.ips as { version: string }[];
      assert.equal(r.json?.cniVersion, v);
      assert.deepEqual(
        ips.map((i) => i.version),
        ['4', '6'],
      );
    });
  }
  void it('0.2.0 and absent version (0.1.0): ip4/ip6 with nested routes', async () => {
    for (const v of ['0.2.0', undefined]) {
      const r = await invoke(ADD, netconf(v, { assignIPv6: true }), fakeBackend());
      assert.equal(r.json?.cniVersion, v ?? '0.1.0');
      assert.deepEqual(r.json?.ip4, {
        ip: '10.244.0.2/26',
        gateway: '10.244.0.1',
        routes: [{ dst: '0.0.0.0/0' }],
      });
      assert.deepEqual((r.json?.ip6 as { routes: unknown }).routes, [{ dst: '::/0' }]);
      assert.equal(r.json?.ips, undefined);
    }
  });
  void it('1.1.0 keeps route extras, 1.0.0 drops them; dst is masked to canonical form', async () => {
    const routes = [{ dst: '192.168.1.7/16', gw: '10.244.0.1', priority: 100, mtu: 1400 }];
    const r11 = await invoke(ADD, netconf('1.1.0', { routes }), fakeBackend());
    assert.deepEqual(r11.json?.routes, [
      { dst: '192.168.0.0/16', gw: '10.244.0.1', priority: 100, mtu: 1400 },
    ]);
    const r10 = await invoke(ADD, netconf('1.0.0', { routes }), fakeBackend());
    assert.deepEqual(r10.json?.routes, [{ dst: '192.168.0.0/16', gw: '10.244.0.1' }]);
  });
  void it('dual stack: one address per family, routes per family, dns passed through', async () => {
    const dns = { nameservers: ['10.96.0.10'] };
    const r = await invoke(ADD, netconf('1.0.0', { assignIPv6: true, dns }), fakeBackend());
    assert.deepEqual(r.json?.ips, [
      { address: '10.244.0.2/26', gateway: '10.244.0.1' },
      { address: 'fd00:10:244::2/122', gateway: 'fd00:10:244::1' },
    ]);
    assert.deepEqual(r.json?.routes, [{ dst: '0.0.0.0/0' }, { dst: '::/0' }]);
    assert.deepEqual(r.json?.dns, dns);
  });
});

void describe('ADD semantics', () => {
  void it('CNI_ARGS in any order give the pod identity and IP= a static address', async () => {
    const b = fakeBackend();
    const args =
      'K8S_POD_UID=u1;IP=10.244.0.50;K8S_POD_NAME=p;IgnoreUnknown=1;K8S_POD_INFRA_CONTAINER_ID=ctr1;K8S_POD_NAMESPACE=ns';
    const r = await invoke({ ...ADD, CNI_ARGS: args }, netconf('1.0.0'), b);
    assert.equal((r.json?.ips as { address: string }[])[0]?.address, '10.244.0.50/26');
    const req = b.calls[0]?.arg as { pod: unknown; staticIPs: string[] };
    assert.deepEqual(req.pod, { namespace: 'ns', name: 'p', uid: 'u1' });
  });
  void it('K8S_* keys without IgnoreUnknown are accepted (documented leniency)', async () => {
    const r = await invoke(
      { ...ADD, CNI_ARGS: 'K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p' },
      netconf('1.0.0'),
      fakeBackend(),
    );
    assert.equal(r.code, 0);
  });
  void it('static IP precedence: runtimeConfig.ips > args.cni.ips > CNI_ARGS IP', async () => {
    const b = fakeBackend();
    const top = { runtimeConfig: { ips: ['10.244.0.7/24'] }, args: { cni: { ips: ['10.244.0.8'] } } };
    await invoke({ ...ADD, CNI_ARGS: 'IP=10.244.0.9' }, netconf('1.0.0', {}, top), b);
    assert.deepEqual((b.calls[0]?.arg as { staticIPs: string[] }).staticIPs, ['10.244.0.7']);
    const b2 = fakeBackend();
    await invoke({ ...ADD, CNI_ARGS: 'IP=10.244.0.9' }, netconf('1.0.0', {}, { args: top.args }), b2);
    assert.deepEqual((b2.calls[0]?.arg as { staticIPs: string[] }).staticIPs, ['10.244.0.8']);
  });
  void it('duplicate ADD: code 100, the first allocation untouched', async () => {
    const b = fakeBackend({ seed: { 'net1.ctr1.eth0': ['10.244.0.2/26'] } });
    const r = await invoke(ADD, netconf('1.0.0'), b);
    assert.equal(r.json?.code, 100);
    assert.deepEqual(b.allocations.get('net1.ctr1.eth0'), ['10.244.0.2/26']);
  });
  void it('exhausted: code 101; unavailable static: code 102', async () => {
    assert.equal((await invoke(ADD, netconf('1.0.0'), fakeBackend({ capacity: 0 }))).json?.code, 101);
    assert.equal(
      (await invoke({ ...ADD, CNI_ARGS: 'IP=10.244.0.1' }, netconf('1.0.0'), fakeBackend())).json?.code,
      102,
    );
  });
  void it('datastore unreachable: code 11 on ADD, DEL, GC; STATUS code 50', async () => {
    const b = fakeBackend({ unreachable: true });
    assert.equal((await invoke(ADD, netconf('1.0.0'), b)).json?.code, 11);
    assert.equal((await invoke({ ...ADD, CNI_COMMAND: 'DEL' }, netconf('1.0.0'), b)).json?.code, 11);
    assert.equal((await invoke({ CNI_COMMAND: 'GC' }, netconf('1.1.0'), b)).json?.code, 11);
    assert.equal((await invoke({ CNI_COMMAND: 'STATUS' }, netconf('1.1.0'), b)).json?.code, 50);
    assert.ok(b.closed >= 3, 'backend closed after each invocation');
  });
});

void describe('DEL, CHECK, GC, STATUS', () => {
  const DEL = { ...baseEnv, CNI_COMMAND: 'DEL' };
  void it('DEL releases, prints nothing; repeated DEL and DEL without netns succeed', async () => {
    const b = fakeBackend({ seed: { 'net1.ctr1.eth0': ['10.244.0.2/26'] } });
    for (const env of [DEL, DEL, { ...DEL, CNI_NETNS: undefined }]) {
      const r = await invoke(env, netconf('1.0.0'), b);
      assert.deepEqual([r.code, r.stdout], [0, '']);
    }
    assert.equal(b.allocations.size, 0);
  });
  void it('DEL with a 1.0.0 chain prevResult and a 0.4.0 one succeeds; K8S_POD_UID is passed when given', async () => {
    const b = fakeBackend();
    const prev10 = {
      cniVersion: '1.0.0',
      interfaces: [{ name: 'veth' }, { name: 'eth0' }],
      ips: [{ address: '10.244.0.5/26', gateway: '10.244.0.1', interface: 1 }],
    };
    const withUid = {
      ...DEL,
      CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID=uid-1',
    };
    assert.equal((await invoke(withUid, netconf('1.0.0', {}, { prevResult: prev10 }), b)).code, 0);
    const prev04 = {
      cniVersion: '0.4.0',
      ips: [{ version: '4', address: '10.244.0.6/26', gateway: '10.244.0.1' }],
    };
    assert.equal((await invoke(DEL, netconf('0.4.0', {}, { prevResult: prev04 }), b)).code, 0);
    assert.deepEqual(
      b.calls.map((c) => (c.arg as { podUID?: string }).podUID),
      ['uid-1', undefined],
    );
  });
  void it('DEL ignores malformed CNI_ARGS', async () => {
    assert.equal((await invoke({ ...DEL, CNI_ARGS: 'junk' }, netconf('1.0.0'), fakeBackend())).code, 0);
  });
  void it('CHECK: ok after ADD; unknown container and mismatching prevResult fail', async () => {
    const b = fakeBackend({ seed: { 'net1.ctr1.eth0': ['10.244.0.2/26'] } });
    const CHECK = { ...baseEnv, CNI_COMMAND: 'CHECK' };
    const prev = (a: string) => ({
      prevResult: { cniVersion: '1.0.0', ips: [{ address: a, gateway: '10.244.0.1', interface: 1 }] },
    });
    assert.deepEqual(
      await invoke(CHECK, netconf('1.0.0', {}, prev('10.244.0.2/26')), b).then((r) => [r.code, r.stdout]),
      [0, ''],
    );
    assert.equal((await invoke(CHECK, netconf('1.0.0', {}, prev('10.244.0.3/26')), b)).json?.code, 103);
    assert.equal((await invoke({ ...CHECK, CNI_CONTAINERID: 'ctr2' }, netconf('1.0.0'), b)).json?.code, 103);
  });
  const GC = {
    CNI_COMMAND: 'GC',
    CNI_PATH: '/opt/cni/bin',
    CNI_CONTAINERID: '',
    CNI_IFNAME: '',
    CNI_NETNS: '',
    CNI_ARGS: '',
  };
  const seeded = () =>
    fakeBackend({
      seed: {
        'net1.A.eth0': ['10.244.0.2/26'],
        'net1.B.eth0': ['10.244.0.3/26'],
        'other.C.eth0': ['10.244.0.4/26'],
      },
    });
  for (const key of ['cni.dev/valid-attachments', 'cni.dev/attachments']) {
    void it(`GC with ${key}: [A] keeps A, releases B, leaves other networks`, async () => {
      const b = seeded();
      const r = await invoke(GC, netconf('1.1.0', {}, { [key]: [{ containerID: 'A', ifname: 'eth0' }] }), b);
      assert.deepEqual([r.code, r.stdout], [0, '']);
      assert.deepEqual([...b.allocations.keys()].sort(), ['net1.A.eth0', 'other.C.eth0']);
    });
  }
  void it('GC with null and with no key: everything of this network released', async () => {
    for (const top of [{ 'cni.dev/valid-attachments': null }, {}]) {
      const b = seeded();
      assert.equal((await invoke(GC, netconf('1.1.0', {}, top), b)).code, 0);
      assert.deepEqual([...b.allocations.keys()], ['other.C.eth0']);
    }
  });
  void it('STATUS: 0 with room, 50 when exhausted', async () => {
    assert.equal((await invoke({ CNI_COMMAND: 'STATUS' }, netconf('1.1.0'), fakeBackend())).code, 0);
    assert.equal(
      (await invoke({ CNI_COMMAND: 'STATUS' }, netconf('1.1.0'), fakeBackend({ capacity: 0 }))).json?.code,
      50,
    );
  });
});

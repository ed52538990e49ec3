/**
 * Conformance cases 12–24 (ADD and result shape), against the real API server
 * with the standalone executable. Pools: conf-v4 10.100.0.0/16 (/24 blocks), conf-v6
 * fd00:100::/112 (/120 blocks), conf-tiny 10.101.0.0/30 (one /30 block: one usable address).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertAdded,
  assertCniError,
  env,
  firstAddress,
  handle,
  startSuite,
  suiteModes,
  type Suite,
} from './helpers/conformance.ts';

type Ip = { address: string; gateway: string; version?: string; interface?: number };
const ipsOf = (r: Record<string, unknown>): Ip[] => r.ips as Ip[];

for (const mode of suiteModes)
  void describe(`CNI conformance: ADD (cases 12–24) [${mode}]`, () => {
    let s: Suite;
    before(async () => (s = await startSuite(mode)));
    after(async () => await s?.teardown());
    const add = (id: string, conf: string, extra: Record<string, string> = {}) =>
      s.run(env('ADD', id, extra), conf);
    const del = (id: string, conf = s.conf('1.0.0'), extra: Record<string, string> = {}) =>
      s.run(env('DEL', id, extra), conf);

    void it('case 12: 1.0.0 result: CIDR with block prefix, gateway inside it, no version / interfaces', async () => {
      const r = assertAdded(await add('c12', s.conf('1.0.0')));
      assert.equal(r.cniVersion, '1.0.0');
      const [ip] = ipsOf(r);
      assert.match(ip?.address ?? '', /^10\.100\.(\d+)\.\d+\/24$/);
      assert.equal(ip?.gateway, (ip?.address ?? '').replace(/\.\d+\/24$/, '.1'));
      assert.equal(ip?.version, undefined);
      assert.equal(r.interfaces, undefined);
      assert.equal(ip?.interface, undefined);
    });
    void it('case 13: 0.3.1 and 0.4.0 results carry ips[].version and echo cniVersion', async () => {
      for (const v of ['0.3.1', '0.4.0']) {
        const r = assertAdded(await add(`c13-${v}`, s.conf(v, { assignIPv6: true })));
        assert.equal(r.cniVersion, v);
        assert.deepEqual(
          ipsOf(r).map((i) => i.version),
          ['4', '6'],
        );
      }
    });
    void it('case 14: 0.2.0 result has ip4/ip6 with nested routes; two addresses of one family: error', async () => {
      const r = assertAdded(await add('c14', s.conf('0.2.0', { assignIPv6: true })));
      assert.deepEqual((r.ip4 as { routes: unknown }).routes, [{ dst: '0.0.0.0/0' }]);
      assert.deepEqual((r.ip6 as { routes: unknown }).routes, [{ dst: '::/0' }]);
      assertCniError(
        await add('c14b', s.conf('0.2.0', {}, { runtimeConfig: { ips: ['10.100.9.9', '10.100.9.10'] } })),
        7,
      );
      assert.equal(s.fx.allocations().has(handle('c14b')), false);
    });
    void it('case 15: 1.1.0 result is shaped like 1.0.0 and keeps optional route fields', async () => {
      const routes = [{ dst: '0.0.0.0/0', priority: 100, mtu: 1400, table: 254, scope: 0 }];
      const r = assertAdded(await add('c15', s.conf('1.1.0', { routes })));
      assert.equal(r.cniVersion, '1.1.0');
      assert.deepEqual(r.routes, routes);
      assert.equal(ipsOf(r)[0]?.version, undefined);
    });
    void it('case 16: route dst canonical, gw only when configured', async () => {
      const r = assertAdded(
        await add(
          'c16',
          s.conf('1.0.0', { routes: [{ dst: '10.7.7.7/8' }, { dst: '192.168.3.3/16', gw: '10.100.0.1' }] }),
        ),
      );
      assert.deepEqual(r.routes, [{ dst: '10.0.0.0/8' }, { dst: '192.168.0.0/16', gw: '10.100.0.1' }]);
    });
    void it('case 17: the gateway is never handed out; the first address of a fresh /24 block is .2', async () => {
      // a fresh node's first block on the direct path; the agent serves only its own node (a call
      // naming another is refused), whose blocks earlier cases used: there, only the gateway rule
      const fresh = s.mode === 'standalone';
      const r = assertAdded(await add('c17', s.conf('1.0.0', fresh ? { nodeName: 'fresh-node-17' } : {})));
      const [ip] = ipsOf(r);
      if (fresh) assert.match(ip?.address ?? '', /\.2\/24$/);
      assert.doesNotMatch(ip?.address ?? '', /\.1\/24$/);
      assert.match(ip?.gateway ?? '', /\.1$/);
      const all = [...s.fx.allocations().values()].flat().map((a) => a.split('/')[0]);
      assert.equal(all.includes(ip?.gateway ?? ''), false);
    });
    void it('case 18: dual stack: one v4 + one v6 with their own gateways; a failing v6 rolls back v4', async () => {
      const r = assertAdded(await add('c18', s.conf('1.0.0', { assignIPv6: true })));
      const [v4, v6] = ipsOf(r);
      assert.match(v4?.address ?? '', /^10\.100\./);
      assert.match(v6?.address ?? '', /^fd00:100::[0-9a-f]+\/120$/);
      assert.match(v6?.gateway ?? '', /^fd00:100::[0-9a-f]*1$/);
      const e = assertCniError(
        await add('c18b', s.conf('1.0.0', { assignIPv6: true, ipv6Pools: ['no-such-pool'] })),
        104,
      );
      assert.match(String(e.details), /no-such-pool/);
      assert.equal(s.fx.allocations().has(handle('c18b')), false);
    });
    void it('case 19: exhausted pool: error code 101, no partial state', async () => {
      const tiny = s.conf('1.0.0', { ipv4Pools: ['conf-tiny'] });
      const first = assertAdded(await add('c19a', tiny));
      assert.equal(firstAddress(first), '10.101.0.2');
      assertCniError(await add('c19b', tiny), 101);
      assert.equal(s.fx.allocations().has(handle('c19b')), false);
      await del('c19a', tiny);
    });
    void it('case 20: 50 parallel ADDs get 50 distinct addresses, all stored', async () => {
      const ids = Array.from({ length: 50 }, (_, i) => `c20-${i}`);
      const results = await Promise.all(ids.map((id) => add(id, s.conf('1.0.0'))));
      const ips = results.map((r) => firstAddress(assertAdded(r)));
      assert.equal(new Set(ips).size, 50);
      const stored = s.fx.allocations();
      for (const [i, id] of ids.entries())
        assert.deepEqual(
          stored.get(handle(id))?.map((a) => a.split('/')[0]),
          [ips[i]],
        );
      await Promise.all(ids.map((id) => del(id)));
    });
    void it('case 21: one container with eth0 and net1: two allocations; DEL of one leaves the other', async () => {
      const a = assertAdded(await add('c21', s.conf('1.0.0')));
      const b = assertAdded(await add('c21', s.conf('1.0.0'), { CNI_IFNAME: 'net1' }));
      assert.notEqual(firstAddress(a), firstAddress(b));
      assert.equal((await del('c21', s.conf('1.0.0'), { CNI_IFNAME: 'net1' })).status, 0);
      const left = s.fx.allocations();
      assert.equal(left.has(handle('c21', 'net1')), false);
      assert.equal(left.get(handle('c21'))?.[0]?.split('/')[0], firstAddress(a));
    });
    void it('case 22: duplicate ADD fails, the first allocation stays and a later DEL releases it', async () => {
      const first = firstAddress(assertAdded(await add('c22', s.conf('1.0.0'))));
      assertCniError(await add('c22', s.conf('1.0.0')), 100);
      assert.deepEqual(
        s.fx
          .allocations()
          .get(handle('c22'))
          ?.map((a) => a.split('/')[0]),
        [first],
      );
      assert.equal((await del('c22')).status, 0);
      assert.equal(s.fx.allocations().has(handle('c22')), false);
    });
    void it('case 23: static IP via CNI_ARGS (any order), runtimeConfig.ips, args.cni.ips; refused when out of range, gateway or taken', async () => {
      const args =
        'K8S_POD_UID=u;IP=10.100.200.50;IgnoreUnknown=1;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=c23a;K8S_POD_NAMESPACE=ns';
      assert.equal(
        firstAddress(assertAdded(await add('c23a', s.conf('1.0.0'), { CNI_ARGS: args }))),
        '10.100.200.50',
      );
      assert.equal(
        firstAddress(
          assertAdded(
            await add('c23b', s.conf('1.0.0', {}, { runtimeConfig: { ips: ['10.100.200.51/24'] } })),
          ),
        ),
        '10.100.200.51',
      );
      assert.equal(
        firstAddress(
          assertAdded(await add('c23c', s.conf('1.0.0', {}, { args: { cni: { ips: ['10.100.200.52'] } } }))),
        ),
        '10.100.200.52',
      );
      for (const ip of ['10.99.0.5', '10.100.200.1', '10.100.200.50']) {
        assertCniError(await add('c23x', s.conf('1.0.0'), { CNI_ARGS: `IP=${ip}` }), 102);
      }
      assert.equal(s.fx.allocations().has(handle('c23x')), false);
    });
    void it('case 24: K8S_* keys without IgnoreUnknown are accepted (documented leniency); truly unknown keys are not', async () => {
      assertAdded(await add('c24', s.conf('1.0.0'), { CNI_ARGS: 'K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p24' }));
      assertCniError(await add('c24b', s.conf('1.0.0'), { CNI_ARGS: 'FOO=bar' }), 4);
    });
  });

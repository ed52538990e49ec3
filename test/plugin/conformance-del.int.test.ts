/**
 * Conformance cases 25–35 (DEL, CHECK, GC, STATUS), against the real API server
 * with the standalone executable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  envNoAttachment,
  firstAddress,
  handle,
  NET,
  startSuite,
  suiteModes,
  type Suite,
} from './helpers/conformance.ts';

for (const mode of suiteModes)
  void describe(`CNI conformance: DEL, CHECK, GC, STATUS (cases 25–35) [${mode}]`, () => {
    let s: Suite;
    before(async () => (s = await startSuite(mode)));
    after(async () => await s?.teardown());
    const add = async (id: string, conf = s.conf('1.1.0'), extra: Record<string, string> = {}) =>
      assertAdded(await s.run(env('ADD', id, extra), conf));
    const held = (id: string, ifname = 'eth0'): boolean => s.fx.allocations().has(handle(id, ifname));

    void it('case 25: DEL of an unknown container: exit 0, empty stdout', async () => {
      assertSilentSuccess(await s.run(env('DEL', 'c25-unknown'), s.conf('1.0.0')));
    });
    void it('case 26: DEL twice: both exit 0', async () => {
      await add('c26');
      assertSilentSuccess(await s.run(env('DEL', 'c26'), s.conf('1.0.0')));
      assertSilentSuccess(await s.run(env('DEL', 'c26'), s.conf('1.0.0')));
      assert.equal(held('c26'), false);
    });
    void it('case 27: DEL with CNI_NETNS unset or naming a deleted netns: released, netns never opened', async () => {
      await add('c27a');
      await add('c27b');
      assertSilentSuccess(await s.run(env('DEL', 'c27a', { CNI_NETNS: undefined }), s.conf('1.0.0')));
      assertSilentSuccess(
        await s.run(env('DEL', 'c27b', { CNI_NETNS: '/var/run/netns/bipam-gone-27' }), s.conf('1.0.0')),
      );
      assert.equal(held('c27a') || held('c27b'), false);
    });
    void it('case 28: DEL with a 1.0.0 chain prevResult and with a 0.4.0 prevResult: parsed and released', async () => {
      const a = await add('c28a', s.conf('1.0.0'));
      const prev10 = {
        cniVersion: '1.0.0',
        interfaces: [{ name: 'veth1' }, { name: 'eth0', sandbox: '/x' }],
        ips: (a.ips as object[]).map((i) => ({ ...i, interface: 1 })),
        routes: a.routes,
      };
      assertSilentSuccess(await s.run(env('DEL', 'c28a'), s.conf('1.0.0', {}, { prevResult: prev10 })));
      const b = await add('c28b', s.conf('0.4.0'));
      assertSilentSuccess(await s.run(env('DEL', 'c28b'), s.conf('0.4.0', {}, { prevResult: b })));
      assert.equal(held('c28a') || held('c28b'), false);
    });
    void it('case 29: CHECK right after ADD with prevResult: exit 0, no stdout', async () => {
      const r = await add('c29', s.conf('1.0.0'));
      assertSilentSuccess(await s.run(env('CHECK', 'c29'), s.conf('1.0.0', {}, { prevResult: r })));
    });
    void it('case 30: CHECK of an unknown container, and with a prevResult IP not reserved: error', async () => {
      const r = await add('c30', s.conf('1.0.0'));
      assertCniError(await s.run(env('CHECK', 'c30-unknown'), s.conf('1.0.0', {}, { prevResult: r })), 103);
      const wrong = { ...r, ips: [{ address: '10.100.250.250/24', gateway: '10.100.250.1' }] };
      const e = assertCniError(
        await s.run(env('CHECK', 'c30'), s.conf('1.0.0', {}, { prevResult: wrong })),
        103,
      );
      assert.match(String(e.details), /10\.100\.250\.250/);
    });
    void it('case 31: CHECK with a config older than 0.4.0: code 1', async () => {
      assertCniError(await s.run(env('CHECK', 'c29'), s.conf('0.3.1')), 1);
    });
    void it('case 32: GC keeps valid attachments, releases the rest; valid-attachments, legacy key, null', async () => {
      for (const [key, value] of [
        ['cni.dev/valid-attachments', 'A'],
        ['cni.dev/attachments', 'A'],
        ['cni.dev/valid-attachments', null],
      ] as const) {
        await add('gcA');
        await add('gcB');
        const list = value === null ? null : [{ containerID: 'gcA', ifname: 'eth0' }];
        assertSilentSuccess(await s.run(envNoAttachment('GC'), s.conf('1.1.0', {}, { [key]: list })));
        assert.equal(held('gcA'), value !== null, `${key}=${JSON.stringify(list)}: A kept`);
        assert.equal(held('gcB'), false, `${key}: B released`);
        await s.run(env('DEL', 'gcA'), s.conf('1.1.0'));
      }
    });
    void it('case 33: GC without an attachments key (cnitool): every allocation of this network on this node is released', async () => {
      await add('gcC');
      await add('gcD', s.conf('1.1.0', {}, { name: 'othernet' }));
      assertSilentSuccess(await s.run(envNoAttachment('GC'), s.conf('1.1.0')));
      assert.equal(held('gcC'), false);
      assert.equal(s.fx.allocations().has('othernet.gcD.eth0'), true, 'another network is untouched');
      await s.run(env('DEL', 'gcD'), s.conf('1.1.0', {}, { name: 'othernet' }));
    });
    void it('case 34: GC or STATUS below 1.1.0: code 1; GC with empty CNI_CONTAINERID/CNI_IFNAME passes validation', async () => {
      assertCniError(await s.run(envNoAttachment('GC'), s.conf('1.0.0')), 1);
      assertCniError(await s.run(envNoAttachment('STATUS'), s.conf('1.0.0')), 1);
      assertSilentSuccess(
        await s.run(envNoAttachment('GC'), s.conf('1.1.0', {}, { 'cni.dev/valid-attachments': [] })),
      );
    });
    void it('case 35: STATUS: 0 while free addresses exist, code 50 when the pool is exhausted', async () => {
      // the agent serves only its own node (a call naming another is refused)
      const node = s.mode === 'agent' ? {} : { nodeName: 'status-node' };
      const tiny = s.conf('1.1.0', { ipv4Pools: ['conf-tiny'], ...node });
      assertSilentSuccess(await s.run(envNoAttachment('STATUS'), tiny));
      const r = await add('c35', tiny);
      assert.equal(firstAddress(r), '10.101.0.2');
      assertCniError(await s.run(envNoAttachment('STATUS'), tiny), 50);
      assertSilentSuccess(await s.run(env('DEL', 'c35'), tiny));
      assertSilentSuccess(await s.run(envNoAttachment('STATUS'), tiny));
      assert.equal(NET, 'confnet');
    });
  });

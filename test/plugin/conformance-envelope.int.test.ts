/**
 * Conformance cases 1–11 (protocol envelope), against the real API server with
 * the standalone executable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertAdded,
  assertCniError,
  env,
  handle,
  startSuite,
  suiteModes,
  type Suite,
} from './helpers/conformance.ts';

for (const mode of suiteModes)
  void describe(`CNI conformance: envelope (cases 1–11) [${mode}]`, () => {
    let s: Suite;
    before(async () => (s = await startSuite(mode)));
    after(async () => await s?.teardown());

    void it('case 1: VERSION with or without stdin lists every version', async () => {
      for (const stdin of ['', '{"cniVersion":"1.0.0"}']) {
        const r = await s.run({ CNI_COMMAND: 'VERSION' }, stdin);
        assert.equal(r.status, 0);
        assert.equal(r.json?.cniVersion, stdin === '' ? '1.1.0' : '1.0.0');
        assert.deepEqual(r.json?.supportedVersions, [
          '0.1.0',
          '0.2.0',
          '0.3.0',
          '0.3.1',
          '0.4.0',
          '1.0.0',
          '1.1.0',
        ]);
      }
    });
    void it('case 2: CNI_COMMAND unset: about text on stderr, exit 0', async () => {
      const r = await s.run({}, '');
      assert.equal(r.status, 0);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /CNI protocol versions supported: 0\.1\.0/);
    });
    void it('case 3: CNI_COMMAND=FOO or add: code 4', async () => {
      for (const c of ['FOO', 'add']) assertCniError(await s.run(env(c), s.conf('1.0.0')), 4);
    });
    void it('case 4: ADD missing CNI_CONTAINERID / CNI_NETNS / CNI_IFNAME / CNI_PATH: code 4 naming it', async () => {
      for (const v of ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH']) {
        const e = assertCniError(await s.run(env('ADD', 'ctr4', { [v]: undefined }), s.conf('1.0.0')), 4);
        assert.match(String(e.msg), new RegExp(`\\[${v}\\]`));
      }
    });
    void it('case 5: CNI_CONTAINERID "-bad id" or a 16-character CNI_IFNAME: code 4', async () => {
      assertCniError(await s.run(env('ADD', '-bad id'), s.conf('1.0.0')), 4);
      assertCniError(await s.run(env('ADD', 'ctr5', { CNI_IFNAME: 'a234567890123456' }), s.conf('1.0.0')), 4);
    });
    void it('case 6: malformed and empty stdin: code 6, nothing allocated', async () => {
      for (const stdin of ['{"cniVersion":', '']) assertCniError(await s.run(env('ADD', 'ctr6'), stdin), 6);
      assert.equal(s.fx.allocations().has(handle('ctr6')), false);
    });
    void it('case 7: missing name or name a/b: code 7', async () => {
      const noName = JSON.stringify({ cniVersion: '1.0.0', type: 'ptp', ipam: { type: 'blockipam' } });
      assertCniError(await s.run(env('ADD', 'ctr7'), noName), 7);
      assertCniError(await s.run(env('ADD', 'ctr7'), s.conf('1.0.0', {}, { name: 'a/b' })), 7);
    });
    void it('case 8: cniVersion 9.9.9: code 1 listing the supported versions', async () => {
      const e = assertCniError(await s.run(env('ADD', 'ctr8'), s.conf('9.9.9')), 1);
      assert.match(String(e.details), /"0\.1\.0".*"1\.1\.0"/);
    });
    void it('case 9: cniVersion absent: treated as 0.1.0, ip4 result', async () => {
      const r = assertAdded(await s.run(env('ADD', 'ctr9'), s.conf(undefined)));
      assert.equal(r.cniVersion, '0.1.0');
      assert.match(String((r.ip4 as { ip: string }).ip), /^10\.100\.\d+\.\d+\/24$/);
      assert.equal(r.ips, undefined);
      await s.run(env('DEL', 'ctr9'), s.conf(undefined));
    });
    void it('case 10: no ipam, an unknown ipam field, an invalid route, a pool with host bits: refused, nothing written', async () => {
      assertCniError(
        await s.run(env('ADD', 'ctr10'), JSON.stringify({ cniVersion: '1.0.0', name: 'confnet' })),
        7,
      );
      const e = assertCniError(
        await s.run(env('ADD', 'ctr10'), s.conf('1.0.0', { subnet: '10.0.0.0/31' })),
        7,
      );
      assert.match(String(e.details), /ipam\.subnet/);
      assertCniError(
        await s.run(env('ADD', 'ctr10'), s.conf('1.0.0', { routes: [{ dst: '10.0.0.0/40' }] })),
        7,
      );
      const stderr = s.fx.applyFails({
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'conf-hostbits' },
        spec: { cidr: '10.102.0.1/24', blockSize: 26 },
      });
      assert.match(stderr, /cidr/i);
      assert.equal(s.fx.allocations().has(handle('ctr10')), false);
    });
    void it('case 11: errors are one JSON object on stdout; success prints only the result', async () => {
      const bad = await s.run(env('ADD', 'ctr11'), 'junk');
      assertCniError(bad, 6);
      assert.doesNotMatch(bad.stdout, /level/);
      const ok = assertAdded(await s.run(env('ADD', 'ctr11'), s.conf('1.0.0')));
      assert.deepEqual(Object.keys(ok).sort(), ['cniVersion', 'ips', 'routes']);
      await s.run(env('DEL', 'ctr11'), s.conf('1.0.0'));
    });
  });

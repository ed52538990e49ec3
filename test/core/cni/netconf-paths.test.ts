// The netconf's host paths: the host lock's file defaults to <cacheDir>/ipam.lock (so it follows
// a custom cacheDir), can be set on its own, and must be absolute (code 7 naming the field).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseNetConf } from '../../../core/cni/netconf.ts';
import { CniError } from 'blockipam/core/cni/errors';

const conf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

void describe('netconf paths', () => {
  void it('lockFile defaults to /var/lib/cni/blockipam/ipam.lock', () => {
    const c = parseNetConf(conf({}));
    assert.equal(c.cacheDir, '/var/lib/cni/blockipam');
    assert.equal(c.lockFile, '/var/lib/cni/blockipam/ipam.lock');
  });
  void it('lockFile follows a custom cacheDir', () =>
    assert.equal(parseNetConf(conf({ cacheDir: '/run/node-1/cni' })).lockFile, '/run/node-1/cni/ipam.lock'));
  void it('lockFile set on its own', () =>
    assert.equal(
      parseNetConf(conf({ lockFile: '/run/lock/blockipam.lock' })).lockFile,
      '/run/lock/blockipam.lock',
    ));
  for (const lockFile of ['ipam.lock', '', 7])
    void it(`lockFile ${JSON.stringify(lockFile)} is refused with code 7 naming it`, () =>
      assert.throws(
        () => parseNetConf(conf({ lockFile })),
        (e: unknown) => e instanceof CniError && e.code === 7 && /lockFile/.test(`${e.message} ${e.details}`),
      ));
});

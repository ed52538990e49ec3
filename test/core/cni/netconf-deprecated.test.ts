// Netconf fields of the removed plugin caches, lock queue and holder priority (lockHolderNice,
// lockQueue, snapshotTtlMs, nodeCacheFile, nodeCacheMaxAgeMs): a conflist written before still
// parses — the fields are listed as deprecated and change nothing — and a value of the wrong type
// is still code 7 naming the field, as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseNetConf } from '../../../core/cni/netconf.ts';
import { CniError } from 'blockipam/core/cni/errors';

const conf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

const stale = {
  lockHolderNice: -10,
  lockQueue: true,
  snapshotTtlMs: 10_000,
  nodeCacheFile: '/var/run/blockipam/node-cache.json',
  nodeCacheMaxAgeMs: 20_000,
};

void describe('netconf: deprecated fields', () => {
  void it('none given: no deprecated list', () => assert.equal(parseNetConf(conf({})).deprecated, undefined));

  void it('a conflist with all of them parses, lists them, and is otherwise the same config', () => {
    const parsed = parseNetConf(conf({ ...stale, lockTimeoutMs: 500 }));
    assert.deepEqual(parsed.deprecated, Object.keys(stale));
    const { deprecated, ...rest } = parsed;
    assert.ok(deprecated);
    assert.deepEqual(rest, parseNetConf(conf({ lockTimeoutMs: 500 })));
  });

  for (const [field, bad] of [
    ['lockHolderNice', 1],
    ['lockQueue', 'yes'],
    ['snapshotTtlMs', -1],
    ['nodeCacheFile', 'relative.json'],
    ['nodeCacheMaxAgeMs', 1.5],
  ] as const)
    void it(`${field}: ${JSON.stringify(bad)} is still refused with code 7 naming it`, () =>
      assert.throws(
        () => parseNetConf(conf({ [field]: bad })),
        (e: unknown) =>
          e instanceof CniError && e.code === 7 && new RegExp(field).test(`${e.message} ${e.details}`),
      ));
});

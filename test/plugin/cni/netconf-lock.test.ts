// The netconf's host lock priority: lockHolderNice defaults to -10 (host/priority.ts' HOLDER_NICE),
// takes the integers -20…0 (0 turns the raise off), and anything else is code 7 naming the field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseNetConf } from '../../../ipam-plugin/cni/netconf.ts';
import { CniError } from '../../../ipam-plugin/cni/errors.ts';

const conf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

void describe('netconf lockHolderNice', () => {
  void it('defaults to -10', () => assert.equal(parseNetConf(conf({})).lockHolderNice, -10));
  for (const lockHolderNice of [0, -1, -20])
    void it(`${lockHolderNice} is taken as given`, () =>
      assert.equal(parseNetConf(conf({ lockHolderNice })).lockHolderNice, lockHolderNice));
  for (const lockHolderNice of [1, 19, -21, -10.5, '-10', null])
    void it(`${JSON.stringify(lockHolderNice)} is refused with code 7 naming it`, () =>
      assert.throws(
        () => parseNetConf(conf({ lockHolderNice })),
        (e: unknown) =>
          e instanceof CniError && e.code === 7 && /lockHolderNice/.test(`${e.message} ${e.details}`),
      ));
});

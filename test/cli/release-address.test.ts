// ipamctl release --ip on the memory store: an address no IPPool and no IPAMBlock contains is
// refused input (exit 2) saying so, not "not allocated" with exit 0 as if blockipam could have
// held it; an address of a pool that nothing holds is still "nothing to release".
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { byAddress } from '../../cli/commands/release.ts';
import { reportFailure } from '../../cli/errors.ts';
import { EXIT, isCliError } from '../../cli/io.ts';
import { pool } from '../core/fixtures.ts';

/** What `release --ip` does up to its plan: the candidates, or the line and exit code of a refusal. */
async function releaseIP(ds: MemoryDatastore, ip: string) {
  try {
    return { candidates: await byAddress(ds, { ip, force: false }) };
  } catch (error) {
    let stderr = '';
    const code = reportFailure({ write: (t: string) => (stderr += t) }, error);
    return { error, code, stderr };
  }
}

describe('release --ip: an address in no IPPool', () => {
  const cases: [string, MemoryDatastore, RegExp][] = [
    // one pool elsewhere: named, so the operator sees where addresses do come from
    [
      'a pool elsewhere',
      new MemoryDatastore({ pools: [pool('p4', { cidr: '10.244.0.0/16' })] }),
      /^ipamctl: 192\.168\.1\.1 is in no IPPool \(p4 10\.244\.0\.0\/16\) and no IPAMBlock: nothing to release\n$/,
    ],
    // no pool at all
    [
      'no pools',
      new MemoryDatastore({}),
      /^ipamctl: 192\.168\.1\.1 is in no IPPool \(there are none\) and no IPAMBlock: nothing to release\n$/,
    ],
  ];
  for (const [name, ds, message] of cases)
    test(`${name}: refused, exit 2, the message says it is in no IPPool`, async () => {
      const r = await releaseIP(ds, '192.168.1.1');
      assert.ok(isCliError(r.error), String(r.error));
      assert.equal(r.code, EXIT.ERROR);
      assert.match(r.stderr ?? '', message);
    });

  // in a pool, in no block: not refused — nothing holds it, so there is nothing to release (exit 0)
  test('an address of a pool that no block holds is not refused: no candidates', async () => {
    const ds = new MemoryDatastore({ pools: [pool('p4', { cidr: '10.244.0.0/16' })] });
    const r = await releaseIP(ds, '10.244.3.7');
    assert.deepEqual(r.candidates, []);
  });
});

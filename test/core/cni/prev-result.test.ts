/** Reading addresses out of a prevResult of any version (DEL and CHECK). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prevResultAddresses } from '../../../core/cni/prev-result.ts';

void describe('prevResult', () => {
  void it('reads 1.0.0, 0.4.0 and 0.2.0 shapes; skips junk', () => {
    assert.deepEqual(
      prevResultAddresses({ ips: [{ address: '10.0.0.2/24', interface: 1 }, { address: 'junk' }, null] }),
      ['10.0.0.2'],
    );
    assert.deepEqual(prevResultAddresses({ ip4: { ip: '10.0.0.3/24' }, ip6: { ip: 'fd00::3/64' } }), [
      '10.0.0.3',
      'fd00::3',
    ]);
    assert.deepEqual(prevResultAddresses(undefined), []);
  });
});

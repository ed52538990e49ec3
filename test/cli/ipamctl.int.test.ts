// ipamctl's executable (cli/main.ts) sets the process exit code from the dispatcher's (cli/ipamctl.ts):
// a clean check exits 0, an unknown flag 2. Usage errors, --help and refused input are run
// in-process, counting connections: client-validation.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { controlPlane } from '../helpers/control-plane.ts';
import { adminHooks } from './cluster.ts';

const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));

describe('ipamctl executable (real API server)', () => {
  adminHooks(() => undefined);

  test('the executable: node cli/main.ts check sets the process exit code', () => {
    const ok = spawnSync(process.execPath, [main, 'check', '--kubeconfig', controlPlane().adminKubeconfig], {
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /Check complete: no problems found\./);
    const bad = spawnSync(process.execPath, [main, 'check', '--nope'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
  });
});

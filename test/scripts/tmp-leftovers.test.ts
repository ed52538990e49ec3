/**
 * Test files that write into the temporary directory leave nothing there, whatever their
 * outcome: each file listed runs under Node's test runner with TMPDIR set to a fresh directory,
 * which must be empty afterwards. test/core/kube-transport.test.ts left a
 * /tmp/blockipam-kubeconfig-* directory of keys and kubeconfigs behind on every run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Unit-tier files that create temporary directories of their own. */
const FILES = ['test/core/kube-transport.test.ts'];

for (const file of FILES)
  void it(`${file} leaves nothing in the temporary directory`, () => {
    const tmp = mkdtempSync(join(tmpdir(), 'bipam-leftovers-'));
    try {
      const r = spawnSync(process.execPath, ['--test', '--test-reporter=dot', file], {
        cwd: root,
        // Without NODE_TEST_CONTEXT: with it the inner runner reports to this one instead of running.
        env: { ...process.env, NODE_TEST_CONTEXT: undefined, TMPDIR: tmp },
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, `${file} failed:\n${r.stdout}${r.stderr}`);
      assert.deepEqual(readdirSync(tmp), [], `${file} left these in TMPDIR`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

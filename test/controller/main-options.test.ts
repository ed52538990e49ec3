// The controller's command line refuses what cannot work, before it connects anywhere: an
// --events-namespace other than "default" (every Event about a cluster-scoped object would be
// refused there with 422 — found by test/shared/rbac.int.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const MAIN = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'block-controller',
  'controller',
  'main.ts',
);

test('--events-namespace other than "default" is a usage error naming the flag', () => {
  const r = spawnSync(
    process.execPath,
    [MAIN, '--events-namespace', 'kube-system', '--kubeconfig', '/nonexistent'],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--events-namespace must be "default" \(got "kube-system"\)/);
});

// the deleted-node quarantine is whole seconds, 0 (off) or more
for (const value of ['-1', '1.5', 'soon'])
  test(`--node-gone-grace-seconds ${value} is a usage error naming the flag`, () => {
    const r = spawnSync(
      process.execPath,
      [MAIN, '--node-gone-grace-seconds', value, '--kubeconfig', '/nonexistent'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--node-gone-grace-seconds must be a whole number of seconds >= 0/);
  });

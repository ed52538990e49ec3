/**
 * down.sh and up.sh refuse what is not theirs: down.sh removes only an up.sh run directory
 * (name `blockipam-cluster.*` plus the `started` marker up.sh writes before starting anything),
 * so a typo or the "." of a failed `dirname "$env"` never deletes a user's files; up.sh refuses an
 * --owner-pid that is not a live process before it builds or starts anything.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function down(dir: string, cwd?: string): { status: number | null; stderr: string } {
  const r = spawnSync('bash', [join(here, 'down.sh'), dir], { encoding: 'utf8', cwd });
  return { status: r.status, stderr: r.stderr };
}

test('down.sh refuses a directory that is not a run directory and leaves it whole', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-not-a-run-'));
  try {
    writeFileSync(join(dir, 'precious'), 'x');
    // "." from inside the directory: the failed-up.sh recipe.
    const r = down('.', dir);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /not a test-cluster run directory/);
    assert.ok(existsSync(join(dir, 'precious')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('down.sh refuses a blockipam-cluster.* directory without the started marker', () => {
  const dir = mkdtempSync(join(tmpdir(), 'blockipam-cluster.'));
  try {
    mkdirSync(join(dir, 'sub'));
    const r = down(dir);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /no 'started' marker/);
    assert.ok(existsSync(join(dir, 'sub')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('up.sh refuses an --owner-pid that is not a live process', () => {
  for (const owner of ['abc', '0', '2147483646']) {
    const r = spawnSync('bash', [join(here, 'up.sh'), '--nodes', '1', '--owner-pid', owner], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2, `--owner-pid ${owner}: ${r.stderr}`);
    assert.match(r.stderr, /--owner-pid must be the PID of a live process/);
  }
});

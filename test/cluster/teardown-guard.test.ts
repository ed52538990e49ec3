/**
 * down.sh and up.sh refuse what is not theirs: down.sh removes only an up.sh run directory
 * (name `blockipam-cluster.*` plus the `started` marker up.sh writes before starting anything),
 * so a typo or the "." of a failed `dirname "$env"` never deletes a user's files; up.sh refuses an
 * --owner-pid that is not a live process before it builds or starts anything. down.sh prints one
 * progress line per thing it stops or removes (it printed nothing).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

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

test('down.sh prints a line per daemon it stops and for the run directory it removes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'blockipam-cluster.'));
  // A stand-in daemon recorded as up.sh records one: PID and start time (lib.sh record).
  const daemon = spawn('sleep', ['60'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => daemon.once('exit', resolve));
  try {
    const pid = daemon.pid ?? 0;
    const startTime = readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[21];
    mkdirSync(join(dir, 'pids'));
    writeFileSync(join(dir, 'pids', 'etcd'), `${pid} ${startTime}\n`);
    writeFileSync(join(dir, 'started'), '0\n');
    // async: this process must reap the stopped daemon while down.sh waits for it to go
    const { stderr } = await promisify(execFile)('bash', [join(here, 'down.sh'), dir], { encoding: 'utf8' });
    assert.deepEqual(stderr.trim().split('\n'), [
      '[cluster] stopping etcd',
      `[cluster] removing the run directory ${dir}`,
    ]);
    await exited;
    assert.ok(!existsSync(dir));
  } finally {
    daemon.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

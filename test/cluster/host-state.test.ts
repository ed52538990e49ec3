/**
 * The teardown's host check (test/cluster/host-state.sh) catches a change and ignores what
 * belongs to other runs. Each case changes the host briefly (a directory under /run, a cgroup)
 * and undoes it in `finally`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = join(dirname(fileURLToPath(import.meta.url)), 'host-state.sh');
const ourId = `t${process.pid}`.slice(0, 6).padEnd(6, 'x');

function snapshot(file: string): void {
  const r = spawnSync('bash', [script, 'snapshot', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

function compare(before: string, after: string): { status: number; stderr: string } {
  const r = spawnSync('bash', [script, 'compare', before, after, ourId], { encoding: 'utf8' });
  return { status: r.status ?? -1, stderr: r.stderr };
}

/** Snapshot, change, snapshot, undo: the comparison of the two snapshots. */
function around(change: () => void, undo: () => void): { status: number; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-host-state-'));
  try {
    snapshot(join(dir, 'before'));
    try {
      change();
      snapshot(join(dir, 'after'));
    } finally {
      undo();
    }
    return compare(join(dir, 'before'), join(dir, 'after'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('no change: the snapshots compare equal', () => {
  assert.equal(
    around(
      () => undefined,
      () => undefined,
    ).status,
    0,
  );
});

test('a new path under /run is reported', () => {
  const path = `/run/bipam-host-state-test.${process.pid}`;
  const r = around(
    () => mkdirSync(path),
    () => rmdirSync(path),
  );
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(path.replaceAll('.', '\\.')));
});

test('a cgroup left by this run is reported; one of another run is not', () => {
  const ours = `/sys/fs/cgroup/pids/blockipam-cluster.${ourId}`;
  const other = '/sys/fs/cgroup/pids/blockipam-cluster.OTHER9';
  const mine = around(
    () => mkdirSync(ours),
    () => rmdirSync(ours),
  );
  assert.equal(mine.status, 1);
  assert.match(mine.stderr, /blockipam-cluster\./);
  const theirs = around(
    () => mkdirSync(other),
    () => rmdirSync(other),
  );
  assert.equal(theirs.status, 0, theirs.stderr);
});

/**
 * up.sh, pod-network.sh, ctl.sh and demo.sh on bad arguments: exit 2 with one line naming the problem and a
 * usage line, never bash's raw `line N: 2: ...` message, and never exit 0 for a daemon that does
 * not exist (a typo in `ctl.sh RUN stop kubelet-node-9` used to "succeed"). No cluster is started: up.sh
 * refuses its arguments before it builds or starts anything, and ctl.sh runs against a run
 * directory made here that only lists its daemons (`cmds/`), as up.sh's does.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const script = (name: string, args: readonly string[]): { status: number | null; stderr: string } => {
  const r = spawnSync('bash', [join(here, name), ...args], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
};
/** bash's own message for `${x:?}` / a failed command: "<script>: line N: ..." */
const rawBash = /line \d+:/;

void describe('up.sh: bad arguments', () => {
  for (const [args, why] of [
    [['--nodes'], /^up\.sh: --nodes needs a number$/m],
    [['--owner-pid'], /^up\.sh: --owner-pid needs a PID$/m],
    [['--nodes', 'x'], /^up\.sh: --nodes must be 1-99, got 'x'$/m],
    [['--bogus'], /^up\.sh: unknown argument --bogus$/m],
    [['--pod-network'], /^up\.sh: --pod-network needs kind or gke$/m],
    [['--pod-network', 'calico'], /^up\.sh: --pod-network must be kind or gke, got 'calico'$/m],
  ] as const)
    void it(`up.sh ${args.join(' ')}: exit 2, one line and the usage`, () => {
      const r = script('up.sh', args);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, why);
      assert.match(
        r.stderr,
        /^usage: up\.sh \[--nodes N\] \[--owner-pid PID\] \[--ipv6\] \[--pod-network kind\|gke\]$/m,
      );
      assert.doesNotMatch(r.stderr, rawBash);
    });
});

void describe('pod-network.sh: bad arguments', () => {
  // an existing file stands in for the env file: the shape is refused before it is read
  const envFile = fileURLToPath(import.meta.url);
  for (const [label, args, why] of [
    ['(nothing)', [], /^pod-network\.sh: name the env file and the shape$/m],
    ['ENV-missing kind', ['/nonexistent-env', 'kind'], /^pod-network\.sh: no env file \/nonexistent-env$/m],
    ['ENV calico', [envFile, 'calico'], /^pod-network\.sh: the shape must be kind or gke, got 'calico'$/m],
  ] as const)
    void it(`pod-network.sh ${label}: exit 2, one line and the usage`, () => {
      const r = script('pod-network.sh', args);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, why);
      assert.match(r.stderr, /^usage: pod-network\.sh ENV_FILE kind\|gke$/m);
      assert.doesNotMatch(r.stderr, rawBash);
    });
});

void describe('demo.sh: bad arguments', () => {
  void it('demo.sh --bogus: exit 2 and the usage, which says --keep keeps the installation', () => {
    const r = spawnSync('bash', [join(here, '../../scripts/demo.sh'), '--bogus'], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^usage: demo\.sh \[--keep\] .*leave the cluster up with blockipam installed/m);
  });
});

void describe('ctl.sh: bad arguments', () => {
  let run: string;
  before(() => {
    run = mkdtempSync(join(tmpdir(), 'blockipam-cluster.'));
    mkdirSync(join(run, 'cmds'));
    for (const d of ['kubelet-node-1', 'scheduler']) writeFileSync(join(run, 'cmds', d), 'CMD=(true)\n');
  });
  after(() => rmSync(run, { recursive: true, force: true }));

  for (const action of ['stop', 'kill', 'start', 'restart'])
    void it(`ctl.sh RUN ${action} <unknown daemon>: exit 2 naming it and the run's daemons`, () => {
      const r = script('ctl.sh', [run, action, 'kubelet-node-9']);
      assert.equal(r.status, 2, r.stderr);
      assert.match(
        r.stderr,
        /^ctl\.sh: no daemon kubelet-node-9 in .* \(daemons: kubelet-node-1 scheduler\)$/m,
      );
    });

  void it('ctl.sh RUN stop <a daemon that is not running>: exit 0 (stopping is idempotent)', () => {
    const r = script('ctl.sh', [run, 'stop', 'scheduler']);
    assert.equal(r.status, 0, r.stderr);
  });

  for (const [args, why] of [
    [[], /^ctl\.sh: name the run directory$/m],
    [['/nonexistent-run-dir'], /^ctl\.sh: no run directory \/nonexistent-run-dir$/m],
    [['RUN'], /^ctl\.sh: name an action$/m],
    [['RUN', 'bogus', 'x'], /^ctl\.sh: unknown action bogus$/m],
    [['RUN', 'stop'], /^ctl\.sh: stop needs a namespace, a daemon or an image archive$/m],
  ] as const)
    void it(`ctl.sh ${args.join(' ') || '(nothing)'}: exit 2, one line and the usage`, () => {
      const r = script(
        'ctl.sh',
        args.map((a) => (a === 'RUN' ? run : a)),
      );
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, why);
      assert.match(r.stderr, /^usage: ctl\.sh RUN_DIR /m);
      assert.doesNotMatch(r.stderr, rawBash);
    });
});

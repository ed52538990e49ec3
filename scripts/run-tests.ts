/**
 * Test launcher, two tiers (test/helpers/tier.ts has the rule: a test that needs the control
 * plane, a test cluster, root or network namespaces is named `*.int.test.ts`):
 *
 *   node scripts/run-tests.ts [glob ...]          every test (default test/**\/*.test.ts): starts
 *       ONE local control plane (etcd + kube-apiserver) for the whole run, exports its
 *       description as CP_* environment variables — and, when a file under test/cluster/ is
 *       selected, ONE multi-node cluster (test/cluster/up.sh, CLUSTER_* variables) — runs the
 *       files one at a time (integration tests share the cluster-scoped CRDs), then stops both —
 *       also on SIGINT/SIGTERM, and through the up.sh watchdogs if this process is SIGKILLed. A
 *       cluster teardown whose host check fails (docs/test-cluster.md) fails the run.
 *   node scripts/run-tests.ts --unit [glob ...]   the unit tests only (`npm run test:unit`): no
 *       control plane, files in parallel (--test-concurrency = the machine's cores, at least 2),
 *       BLOCKIPAM_TEST_TIER=unit so a test reaching for the control plane or a namespace fails.
 *
 * Exits 1 when the globs match no test file (a typo must not pass as green), and, in both tiers,
 * when any test or suite was skipped or marked todo — listed on stderr (test/helpers/skip-reporter.ts
 * finds them): a skip reports as passed, and no test may skip itself (test/helpers/tier.ts).
 */
import { spawn } from 'node:child_process';
import { globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';
import { startCluster, type StartedCluster } from '../test/helpers/cluster.ts';
import { startControlPlane } from '../test/helpers/control-plane.ts';
import { TIER_ENV } from '../test/helpers/tier.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const unit = process.argv[2] === '--unit';
const globs = process.argv.slice(unit ? 3 : 2);
const files = [
  ...new Set((globs.length > 0 ? globs : ['test/**/*.test.ts']).flatMap((g) => globSync(g, { cwd: root }))),
]
  .filter((f) => !unit || !f.endsWith('.int.test.ts'))
  .sort();
if (files.length === 0) {
  console.error(
    `run-tests: no ${unit ? 'unit ' : ''}test file matches ${globs.join(' ') || 'test/**/*.test.ts'}`,
  );
  process.exit(1);
}

/**
 * The runner's reporters — spec on stdout, test/helpers/skip-reporter.ts into a temporary file —
 * and `status`, which removes that file and makes a passing run's status 1 when it lists any
 * skipped or todo test or suite (named on stderr).
 */
function reporting(): { args: string[]; status: (runner: number) => number } {
  const dir = mkdtempSync(join(tmpdir(), 'run-tests-'));
  const file = join(dir, 'skipped.txt');
  const reporter = pathToFileURL(join(root, 'test', 'helpers', 'skip-reporter.ts')).href;
  const status = (runner: number): number => {
    let listed = '';
    try {
      listed = readFileSync(file, 'utf8');
    } catch {
      // No file: the runner did not get as far as reporting.
    }
    rmSync(dir, { recursive: true, force: true });
    const lines = listed.split('\n').filter(Boolean);
    if (lines.length === 0) return runner;
    console.error(
      `run-tests: ${lines.length} skipped or todo, which fails the run (tests never skip: a missing prerequisite fails its test, test/helpers/tier.ts):\n` +
        lines.map((l) => `  ${l}`).join('\n'),
    );
    return runner === 0 ? 1 : runner;
  };
  return {
    args: [
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${reporter}`,
      `--test-reporter-destination=${file}`,
    ],
    status,
  };
}

if (unit) {
  // At least 2: many unit tests wait on child processes (the lock, the dispatcher), not the CPU.
  const concurrency = Math.max(2, availableParallelism());
  console.log(`unit tier: ${files.length} files, ${concurrency} at a time, no control plane`);
  const report = reporting();
  const child = spawn(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=120000', ...report.args, ...files],
    { cwd: root, stdio: 'inherit', env: { ...process.env, [TIER_ENV]: 'unit' } },
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(report.status(code ?? (signal ? 130 : 1))));
} else {
  runAll();
}

function runAll(): void {
  const plane = startControlPlane();
  if (!plane) {
    console.error('run-tests: the control plane did not start');
    process.exit(1);
  }
  const cpEnv = plane.env;
  console.log(
    `control plane: kube-apiserver ${cpEnv.CP_SERVER_VERSION} at ${cpEnv.CP_API_URL} (started in ${cpEnv.CP_STARTUP_SECONDS} s)`,
  );
  let multiNode: StartedCluster | undefined;
  if (files.some((f) => f.startsWith('test/cluster/') && f.endsWith('.int.test.ts'))) {
    multiNode = startCluster();
    if (!multiNode) {
      plane.stop();
      console.error('run-tests: the test cluster (test/cluster/up.sh) did not start');
      process.exit(1);
    }
    console.log(
      `test cluster: ${multiNode.env.CLUSTER_NODES} registered in ${multiNode.env.CLUSTER_STARTUP_SECONDS} s (${multiNode.env.CLUSTER_RUN_DIR})`,
    );
  }
  /** Stops both; false when the cluster's teardown found the host changed. */
  const stop = (): boolean => {
    const hostUnchanged = multiNode?.stop() ?? true;
    plane.stop();
    return hostUnchanged;
  };

  // The runner gets its own process group, recorded in the run dir: down.sh (also when the
  // watchdog calls it after this launcher was SIGKILLed) stops the whole test run with it.
  // 10 min per test: a hung test fails instead of eating CI's 90 minutes.
  const report = reporting();
  const child = spawn(
    process.execPath,
    ['--test', '--test-concurrency=1', '--test-timeout=600000', ...report.args, ...files],
    { cwd: root, stdio: 'inherit', env: { ...process.env, ...cpEnv, ...multiNode?.env }, detached: true },
  );
  if (child.pid !== undefined) writeFileSync(join(cpEnv.CP_RUN_DIR ?? '', 'tests.pid'), String(child.pid));
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      interrupted = true;
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    });
  }
  child.on('exit', (code, signal) => {
    const hostUnchanged = stop();
    if (!hostUnchanged) console.error('run-tests: the test cluster changed the host (see above)');
    const runner = report.status(code ?? (signal ? 130 : 1));
    const status = interrupted ? 130 : runner;
    process.exit(status === 0 && !hostUnchanged ? 1 : status);
  });
}

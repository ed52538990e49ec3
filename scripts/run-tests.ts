/**
 * Test launcher: starts ONE local control plane (etcd + kube-apiserver) for the whole run,
 * exports its description as CP_* environment variables, runs every `*.test.ts` under
 * `test/` with Node's test runner (files one at a time: integration tests share the
 * cluster-scoped CRDs), then stops the control plane — also on SIGINT/SIGTERM, and through
 * up.sh's watchdog if this process is SIGKILLed.
 *
 * Usage: node scripts/run-tests.ts [glob ...]   (default: test/**\/*.test.ts)
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cpDir = join(root, 'test', 'control-plane');

const up = spawnSync('bash', [join(cpDir, 'up.sh'), '--owner-pid', String(process.pid)], {
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
});
if (up.status !== 0) {
  console.error('run-tests: the control plane did not start');
  process.exit(1);
}
const envFile = up.stdout.trim().split('\n').pop() ?? '';
const cpEnv: Record<string, string> = {};
for (const line of readFileSync(envFile, 'utf8').split('\n')) {
  const eq = line.indexOf('=');
  if (eq > 0) cpEnv[line.slice(0, eq)] = line.slice(eq + 1);
}
console.log(
  `control plane: kube-apiserver ${cpEnv.CP_SERVER_VERSION} at ${cpEnv.CP_API_URL} (started in ${cpEnv.CP_STARTUP_SECONDS} s)`,
);

let stopped = false;
function stop(): void {
  if (stopped) return;
  stopped = true;
  spawnSync('bash', [join(cpDir, 'down.sh'), cpEnv.CP_RUN_DIR ?? ''], { stdio: 'inherit' });
}

const globs = process.argv.slice(2);
const child = spawn(
  process.execPath,
  [
    '--test',
    '--test-concurrency=1',
    '--test-reporter=spec',
    ...(globs.length > 0 ? globs : ['test/**/*.test.ts']),
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, ...cpEnv } },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    child.kill(signal);
  });
}
child.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 130 : 1));
});

/**
 * The main-job demo: brings up the local control plane (etcd + kube-apiserver on loopback),
 * installs blockipam's CRDs, and prints what the API server serves. Stops the control plane
 * when done (also on Ctrl-C).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cpDir = join(root, 'test', 'control-plane');

function parseEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

function run(cmd: string, args: readonly string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  return r.stdout;
}

const up = spawnSync('bash', [join(cpDir, 'up.sh'), '--owner-pid', String(process.pid)], {
  stdio: ['ignore', 'pipe', 'inherit'],
  encoding: 'utf8',
});
if (up.status !== 0) process.exit(1);
const env = parseEnvFile(up.stdout.trim().split('\n').pop() ?? '');
const stop = (): void => {
  spawnSync('bash', [join(cpDir, 'down.sh'), env.CP_RUN_DIR ?? '']);
};
process.on('SIGINT', () => {
  stop();
  process.exit(130);
});

try {
  const kubectl = (...args: string[]): string =>
    run(join(env.CP_BIN ?? '', 'kubectl'), ['--kubeconfig', env.CP_ADMIN_KUBECONFIG ?? '', ...args]);
  console.log(
    `kube-apiserver ${env.CP_SERVER_VERSION} at ${env.CP_API_URL}, ready in ${env.CP_STARTUP_SECONDS} s\n`,
  );
  const crdDir = join(root, 'crds');
  if (existsSync(crdDir)) {
    process.stdout.write(kubectl('apply', '-f', crdDir));
    kubectl('wait', '--for=condition=Established', '--timeout=60s', '-f', crdDir);
    console.log('\nblockipam resources served:');
    process.stdout.write(kubectl('api-resources', '--api-group=ipam.blockipam.io'));
  }
  console.log('\nserver version:');
  process.stdout.write(kubectl('version'));
} finally {
  stop();
}

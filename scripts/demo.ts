/**
 * The main-job demo (README: `bash scripts/demo.sh`). On this machine, with one command:
 *  1. starts a local etcd + kube-apiserver on loopback (test/control-plane/up.sh),
 *  2. installs blockipam's CRDs and a default IPv4 pool (`ipamctl pool create`),
 *  3. registers two Nodes and their Pods with the API server (as kubelet would),
 *  4. creates two "node" network namespaces joined by a bridge and starts pods in them through
 *     the reference ptp plugin + portmap with blockipam as IPAM, like a container runtime,
 *  5. prints who got which address from which block, pings pod to pod, shows the pool,
 *  6. audits with `ipamctl check` (exit 0 = clean) with the pods running,
 *  7. deletes the pods (CNI DEL through the chain), audits again, and stops everything.
 * Exit code: 0 when every step worked and both audits were clean; 1 otherwise.
 * Usage: node scripts/demo.ts [--pods-per-node N]   (N: 1-20, default 2)
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startControlPlane } from '../test/helpers/control-plane.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const perNodeArg = argv.includes('--pods-per-node') ? Number(argv[argv.indexOf('--pods-per-node') + 1]) : 2;
if (!Number.isInteger(perNodeArg) || perNodeArg < 1 || perNodeArg > 20) {
  console.error('demo: --pods-per-node must be an integer from 1 to 20');
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  console.error('demo: run as root (it creates network namespaces)');
  process.exit(2);
}

const plane = startControlPlane();
if (!plane) process.exit(1);
const env = plane.env;
Object.assign(process.env, env);
const kubeconfig = env.CP_ADMIN_KUBECONFIG ?? '';
const stop = (): void => plane.stop();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    stop();
    process.exit(130);
  });

/** Runs a command, echoing it; returns its exit code. Output goes to the terminal. */
function step(title: string, cmd: string, args: readonly string[], input?: string): number {
  console.log(`\n$ ${title}`);
  const r = spawnSync(cmd, args, {
    stdio: [input === undefined ? 'ignore' : 'pipe', 'inherit', 'inherit'],
    input,
  });
  if (r.signal) throw new Error(`${title}: killed by ${r.signal}`);
  return r.status ?? 1;
}
const kubectl = (args: readonly string[], input?: string): number =>
  step(
    `kubectl ${args.join(' ')}`,
    join(env.CP_BIN ?? '', 'kubectl'),
    ['--kubeconfig', kubeconfig, ...args],
    input,
  );
const ipamctl = (args: readonly string[]): number =>
  step(`ipamctl ${args.join(' ')}`, process.execPath, [
    join(root, 'cli', 'main.ts'),
    ...args,
    '--kubeconfig',
    kubeconfig,
  ]);
const must = (code: number, what: string): void => {
  if (code !== 0) throw new Error(`${what} failed (exit ${code})`);
};

function nodesAndPods(
  perNode: number,
  podName: (n: number, i: number) => string,
  nodeName: (n: number) => string,
): string {
  const docs: string[] = [];
  for (let n = 0; n < 2; n++) {
    docs.push(JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName(n) } }));
    for (let i = 1; i <= perNode; i++)
      docs.push(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: podName(n, i), namespace: 'default' },
          spec: { nodeName: nodeName(n), containers: [{ name: 'app', image: 'registry.invalid/app:1' }] },
        }),
      );
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs.map((d) => JSON.parse(d) as unknown) });
}

let failed = false;
try {
  console.log(
    `kube-apiserver ${env.CP_SERVER_VERSION} at ${env.CP_API_URL}, ready in ${env.CP_STARTUP_SECONDS} s`,
  );
  const crds = join(root, 'crds');
  must(kubectl(['apply', '-f', crds]), 'installing the CRDs');
  must(kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crds]), 'waiting for the CRDs');
  must(
    ipamctl(['pool', 'create', 'default-ipv4', '--cidr', '10.244.0.0/16', '--block-size', '26']),
    'pool create',
  );

  const { startDemoPods, podTable, demoPodName, demoNodeName } = await import('./demo-pods.ts');
  must(
    kubectl(['apply', '-f', '-'], nodesAndPods(perNodeArg, demoPodName, demoNodeName)),
    'registering nodes and pods',
  );

  console.log('\n$ CNI ADD of each pod through ptp + portmap with blockipam as IPAM');
  const pods = await startDemoPods(perNodeArg);
  try {
    // What kubelet does next: record the pod's IP in its status.
    for (const row of pods.rows) {
      const ip = row.address.split('/')[0] ?? '';
      const patch = JSON.stringify({ status: { podIP: ip, podIPs: [{ ip }] } });
      const r = spawnSync(join(env.CP_BIN ?? '', 'kubectl'), [
        '--kubeconfig',
        kubeconfig,
        'patch',
        'pod',
        row.pod,
        '-n',
        'default',
        '--subresource=status',
        '--type=merge',
        '-p',
        patch,
      ]);
      if (r.status !== 0) throw new Error(`recording the IP of pod ${row.pod} failed`);
    }
    console.log(`${pods.chain}; nodes ${pods.nodes.join(', ')}\n`);
    console.log(podTable(pods.rows));
    const { distinct, problems } = pods.summary;
    console.log(
      `\n${distinct} distinct addresses for ${pods.rows.length} pods; block invariants: ${problems.length === 0 ? 'all hold' : problems.join('; ')}`,
    );
    if (
      pods.rows.some((r) => r.ping.endsWith('FAILED')) ||
      distinct !== pods.rows.length ||
      problems.length > 0
    )
      failed = true;
    must(kubectl(['get', 'ippools,ipamblocks']), 'listing pools and blocks');
    must(ipamctl(['show']), 'ipamctl show');
    if (ipamctl(['check']) !== 0) failed = true;
  } finally {
    console.log('\n$ CNI DEL of each pod (reverse order), then delete the Pod objects');
    await pods.teardown();
    // No kubelet here to confirm a graceful deletion: delete at once, as kubelet would after CNI DEL.
    kubectl(['delete', 'pods', '--all', '-n', 'default', '--grace-period=0', '--force']);
  }
  if (ipamctl(['check']) !== 0) failed = true;
} catch (error) {
  console.error(`\ndemo: ${error instanceof Error ? error.message : String(error)}`);
  failed = true;
} finally {
  stop();
}
console.log(
  failed
    ? '\ndemo: FAILED (see above)'
    : '\ndemo: done — every pod got a unique address, and ipamctl check found the cluster clean',
);
process.exit(failed ? 1 : 0);

/**
 * The Helm chart on the test cluster (helm-install.int.test.ts): what a node of this harness
 * needs before `helm install` — the reference plugins the conflist chains, and one CNI path
 * that is the same on every node — the values that point the chart at the harness, and Helm
 * run against the cluster's API server.
 *
 * Each node's containerd reads its CNI files from the node's run directory
 * (`<run>/<node>/cni/{bin,net.d}`), a different path per node, while a DaemonSet has one
 * hostPath for all. So each node's mount namespace gets a bind mount of its run directory's
 * `cni` folder on {@link NODE_CNI} (under the node's private tmpfs /run: nothing on the host);
 * the agent writes there and the runtime finds the files where it always looks.
 *
 * A test file's life with the chart: {@link setUpChart} in `before`, {@link installWithPluginLog}
 * and {@link waitRolledOut}, {@link tearDownChart} in `after`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { cluster, importImage, inNode, kubectl, kubectlOk, type RunResult } from '../helpers/cluster.ts';
import { CHART, helm as runHelm, REPO, type HelmMajor } from '../charts/helm.ts';
import { nodesReady } from './blockipam.ts';

/** The CNI folder as every node's mount namespace sees it. */
export const NODE_CNI = '/run/blockipam-cni';
/** Not "blockipam": the harness's own install (install-blockipam.sh) owns ClusterRole blockipam-plugin. */
export const RELEASE = 'bipam';
/** The objects' name prefix (helpers: the release name + "-blockipam"). */
export const PREFIX = 'bipam-blockipam';
export const NAMESPACE = 'kube-system';
/** The chart's plugin.logFile in the tests and benches (each node's /var/log is its run dir's log/). */
export const PLUGIN_LOG = '/var/log/blockipam/plugin.log';

/** {@link PLUGIN_LOG} of `node` as the host sees it. */
export const pluginLogOf = (node: string): string =>
  join(cluster().runDir, node, 'log', 'blockipam', 'plugin.log');

function inNodeOk(node: string, cmd: string, args: readonly string[]): string {
  const r = inNode(node, cmd, args);
  if (r.status !== 0) throw new Error(`${node}: ${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/**
 * Prepares every node: ptp, portmap and loopback in its CNI bin dir (as a distribution's
 * containernetworking-plugins package would; the agent installs only blockipam) and the bind
 * mount of its CNI folder on NODE_CNI. Idempotent.
 */
export function prepareNodes(): void {
  const c = cluster();
  for (const node of c.nodes) {
    const dir = `${c.runDir}/${node}/cni`;
    execFileSync('mkdir', ['-p', `${dir}/bin`, `${dir}/net.d`]);
    for (const p of ['ptp', 'portmap', 'loopback'])
      execFileSync('sh', ['-c', `[ -e "${dir}/bin/${p}" ] || ln -s "${c.cniBin}/${p}" "${dir}/bin/${p}"`]);
    inNodeOk(node, 'sh', [
      '-c',
      `mountpoint -q ${NODE_CNI} || { mkdir -p ${NODE_CNI} && mount -n --bind "${dir}" ${NODE_CNI}; }`,
    ]);
  }
}

/**
 * Undoes what the chart left on the nodes for the next test file (which installs the harness's
 * own plugin and conflist): the agent's conflist, kubeconfig, plugin executable, routes and
 * masquerade table, its
 * run directory (the IPAM socket), the bind mount.
 */
export function cleanNodes(): void {
  const c = cluster();
  for (const node of c.nodes) {
    const dir = `${c.runDir}/${node}/cni`;
    execFileSync('rm', ['-f', `${dir}/net.d/10-blockipam.conflist`, `${dir}/net.d/blockipam-kubeconfig`]);
    execFileSync('rm', ['-f', `${dir}/bin/blockipam`]); // install-blockipam.sh puts its recorder back
    inNode(node, 'sh', [
      '-c',
      `ip route flush proto 210; ip -6 route flush proto 210; nft delete table inet blockipam 2>/dev/null; rm -rf /run/blockipam /var/log/blockipam; umount -n ${NODE_CNI} 2>/dev/null; rmdir ${NODE_CNI} 2>/dev/null; true`,
    ]);
  }
}

/** `--set` values pointing the chart at the harness. */
export function harnessValues(): string[] {
  return [
    '--set',
    [
      'apiServer.host=10.99.0.1',
      'apiServer.port=6443',
      `cni.binDir=${NODE_CNI}/bin`,
      `cni.confDir=${NODE_CNI}/net.d`,
      // no registry: the image is imported into every node
      'image.pullPolicy=Never',
    ].join(','),
  ];
}

/** Helm against the cluster (admin kubeconfig on the host side). */
export function helm(major: HelmMajor, args: readonly string[]): RunResult {
  return runHelm(major, [...args, '--kubeconfig', cluster().kubeconfig]);
}

/**
 * The blockipam image: scripts/build-image.sh (cached: it rebuilds only when the executable's
 * sources changed) → its archive and reference (`localhost/blockipam:<version>`), or the archive
 * named by BLOCKIPAM_IMAGE_ARCHIVE (one built already, e.g. by CI) with that reference.
 * @throws Error with the build's stderr when it fails
 */
export function blockipamImage(): { archive: string; ref: string } {
  const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  const given = process.env.BLOCKIPAM_IMAGE_ARCHIVE;
  if (given) return { archive: given, ref: `localhost/blockipam:${version}` };
  const out = execFileSync('bash', [join(REPO, 'scripts', 'build-image.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  });
  const value = (key: string): string => {
    const line = out.split('\n').find((l) => l.startsWith(`${key}=`));
    if (!line) throw new Error(`scripts/build-image.sh printed no ${key}=: ${out}`);
    return line.slice(key.length + 1);
  };
  return { archive: value('ARCHIVE'), ref: value('IMAGE') };
}

/** The image a test installs: {@link blockipamImage}'s archive and reference. */
export interface ChartImage {
  readonly archive: string;
  readonly ref: string;
}

/**
 * What a test file does before its first `helm install`: the image built (or reused) and
 * imported into every node, what a harness install left removed (every IPAMBlock, IPPool and
 * IPAMConfig; {@link cleanNodes}), every node prepared ({@link prepareNodes}), and namespace `ns` (the
 * test's pods) created when given.
 * @returns the image
 * @throws Error when the build, the import or kubectl fails
 */
export function setUpChart(ns?: string): ChartImage {
  const image = blockipamImage();
  importImage(image.archive);
  // A file that ran before may have installed the harness's way (install-blockipam.sh): its
  // pool default-ipv4, which Helm refuses to adopt, its blocks, conflist and plugin go first.
  kubectl(['delete', 'ipamblocks,ippools,ipamconfigs', '--all']);
  cleanNodes();
  prepareNodes();
  if (ns !== undefined) kubectlOk(['create', 'namespace', ns]);
  return image;
}

/**
 * `helm install` of the chart as release {@link RELEASE} in {@link NAMESPACE} with Helm `major`
 * (default 4): {@link harnessValues}, `image`'s tag, plugin.logFile = {@link PLUGIN_LOG}, then
 * `set` (more `key=value` pairs, comma-joined into the same `--set`). Does not wait for the pods.
 * @throws Error with Helm's output when it fails
 */
export function installWithPluginLog(
  image: ChartImage,
  options: { readonly major?: HelmMajor; readonly set?: readonly string[] } = {},
): void {
  const values = [`image.tag=${image.ref.split(':')[1] ?? ''}`, `plugin.logFile=${PLUGIN_LOG}`];
  const args = ['install', RELEASE, CHART, '--namespace', NAMESPACE, ...harnessValues()];
  const r = helm(options.major ?? 4, [...args, '--set', [...values, ...(options.set ?? [])].join(',')]);
  if (r.status !== 0) throw new Error(`helm install failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
}

/**
 * Waits for the agent DaemonSet's rollout, then the controller Deployment's (`kubectl rollout
 * status`, 300 s each).
 * @throws Error with kubectl's stderr when one does not complete
 */
export function waitRolledOut(): void {
  kubectlOk(['-n', NAMESPACE, 'rollout', 'status', `daemonset/${PREFIX}-agent`, '--timeout=300s']);
  kubectlOk(['-n', NAMESPACE, 'rollout', 'status', `deployment/${PREFIX}-controller`, '--timeout=300s']);
}

/**
 * What a test file does in `after`: namespace `ns` deleted (when given; not waited for), the
 * release uninstalled, every IPAMBlock, IPPool and IPAMConfig deleted, the nodes cleaned
 * ({@link cleanNodes}). Failures of the deletions are ignored (some may never have existed).
 */
export function tearDownChart(ns?: string): void {
  if (ns !== undefined) kubectl(['delete', 'namespace', ns, '--wait=false']);
  helm(4, ['uninstall', RELEASE, '--namespace', NAMESPACE]);
  kubectl(['delete', 'ipamblocks,ippools,ipamconfigs', '--all']);
  cleanNodes();
}

/**
 * A test file's chart fixture, registered as its `before` and `after` hooks. Before:
 * {@link setUpChart}(`ns`), `beforeInstall` (e.g. a namespace annotation), {@link installWithPluginLog}
 * with `set`, {@link waitRolledOut}, then every node Ready (a kubelet reports Ready once the
 * runtime has loaded the conflist its agent just wrote). After: {@link tearDownChart}(`ns`).
 * @returns the image (read it once `before` has run)
 */
export function chartFixture(
  ns: string,
  options: { readonly set?: readonly string[]; readonly beforeInstall?: () => void } = {},
): { image(): ChartImage } {
  let image: ChartImage | undefined;
  before(async () => {
    image = setUpChart(ns);
    options.beforeInstall?.();
    installWithPluginLog(image, options.set ? { set: options.set } : {});
    waitRolledOut();
    await nodesReady(120_000);
  });
  after(() => tearDownChart(ns));
  return {
    image() {
      if (!image) throw new Error('chartFixture: the image is known once before() has run');
      return image;
    },
  };
}

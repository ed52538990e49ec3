/**
 * The peer IPAMs the benchmarks run beside blockipam on the same API server (not a test):
 * whereabouts v0.9.2 and calico-ipam (Calico's IPAM, Kubernetes-datastore mode, the v3.28
 * line). Each setup builds the binary (cached in ~/.cache/blockipam), installs the CRDs from
 * the module zip and returns the netconf `ipam` section per node and a regexp that selects its
 * API requests in apiserver_request_total (plugin-bench-lib.ts' `group/resource verb code` keys).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';

/** The build cache (test/control-plane/build-lib.sh's CACHE). */
const CACHE =
  process.env.BLOCKIPAM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'blockipam');
/**
 * The default of `--calico-api`: the projectcalico/api source tarball, kept beside the build
 * cache. Needed only for the first build: once calico-ipam is built it is reused without it.
 */
export const DEFAULT_CALICO_API = join(CACHE, 'src', 'projectcalico-api-b73eae26.tar.gz');
export const WHEREABOUTS_VERSION = 'v0.9.2';
/** The pseudo-version the Go module proxy serves: a release-v3.28 commit after v3.28.5. */
export const CALICO_VERSION = 'v1.11.0-cni-plugin.0.20250813170300-a0db560f0520';
/** As the tables name it. */
export const CALICO_LABEL = 'calico-ipam v3.28 line';

/** Requests of each IPAM, selected from apiserver_request_total keys. */
export const API = {
  blockipam: /^(ipam\.blockipam\.io\/|\/pods |\/namespaces |\/nodes )/,
  whereabouts: /^(whereabouts\.cni\.cncf\.io\/|coordination\.k8s\.io\/|\/pods )/,
  calico: /^(crd\.projectcalico\.org\/|\/pods |\/namespaces |\/nodes )/,
} as const;

export interface PeerIpam {
  readonly bin: string;
  /** The netconf's `ipam` section (calico: the top-level fields are in `top`). */
  ipam(node: string): Record<string, unknown>;
  /** Top-level netconf fields the IPAM reads (calico reads its datastore settings there). */
  top(node: string): Record<string, unknown>;
}

/** kubectl against the control plane (helpers/control-plane.ts); @throws Error with its stderr when it fails */
export const must = (args: string[], input?: string): void => {
  const r = kubectl(args, input === undefined ? {} : { input });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
};
const modCache = (): string => spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout.trim();

/** Builds whereabouts, installs its CRDs and a kube-system namespace (its Lease lives there). */
export function setupWhereabouts(tmp: string, range = '10.242.0.0/16'): PeerIpam {
  const build = spawnSync('bash', [join(repoRoot, 'test/bench/plugin-build-whereabouts.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (build.status !== 0) throw new Error('whereabouts build failed (its output is above)');
  const crds = join(
    modCache(),
    `github.com/k8snetworkplumbingwg/whereabouts@${WHEREABOUTS_VERSION}/doc/crds`,
  );
  for (const f of ['ippools', 'overlappingrangeipreservations', 'nodeslicepools'])
    must(['apply', '-f', join(crds, `whereabouts.cni.cncf.io_${f}.yaml`)]);
  must(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ippools.whereabouts.cni.cncf.io']);
  kubectl(['create', 'namespace', 'kube-system']);
  const cp = controlPlane();
  const flat = join(tmp, 'wb-flat.conf');
  writeFileSync(
    flat,
    JSON.stringify({
      datastore: 'kubernetes',
      kubernetes: { kubeconfig: cp.adminKubeconfig },
      log_level: 'error',
    }),
  );
  return {
    bin: build.stdout.trim(),
    ipam: () => ({
      type: 'whereabouts',
      range,
      configuration_path: flat,
      kubernetes: { kubeconfig: cp.adminKubeconfig },
    }),
    top: () => ({}),
  };
}

export function cleanupWhereabouts(): void {
  kubectl(['delete', 'ippools.whereabouts.cni.cncf.io', '--all', '-A']);
  kubectl(['delete', 'overlappingrangeipreservations.whereabouts.cni.cncf.io', '--all', '-A']);
}

/** A built calico binary (the CNI plugin; `calico-ipam` beside it is the IPAM) and its CRDs. */
export interface CalicoBuild {
  /** The directory holding `calico` and its `calico-ipam` symlink. */
  readonly dir: string;
  /** libcalico-go/config/crd/ of the calico module zip (crd.projectcalico.org/v1). */
  readonly crds: string;
}

/**
 * Builds Calico's CNI plugin and calico-ipam from the projectcalico/api source at `apiSource`
 * (test/bench/plugin-build-calico.sh; a cached build is reused without it).
 * @returns undefined, with the reason on stderr, when calico is not built and `apiSource` is
 *   absent: callers skip calico and say so
 * @throws Error when the build fails
 */
export function buildCalico(apiSource: string): CalicoBuild | undefined {
  const built = join(CACHE, 'bin', `calico-${CALICO_VERSION}-api-b73eae26`, 'calico');
  if (!existsSync(built) && !existsSync(apiSource)) {
    console.error(
      `calico SKIPPED: the projectcalico/api source ${apiSource} is absent (pass --calico-api PATH to a tarball of github.com/projectcalico/api at release-v3.28)`,
    );
    return undefined;
  }
  const build = spawnSync('bash', [join(repoRoot, 'test/bench/plugin-build-calico.sh'), apiSource], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (build.status !== 0) throw new Error(`calico build failed (exit ${build.status}; its output is above)`);
  return {
    dir: build.stdout.trim().split('\n').at(-1) ?? '',
    crds: join(modCache(), `github.com/projectcalico/calico@${CALICO_VERSION}/libcalico-go/config/crd`),
  };
}

/**
 * Builds calico-ipam (buildCalico), installs Calico's CRDs and an IPPool on the test control plane.
 * @returns undefined, with the reason on stderr, when calico-ipam is not built and `apiSource`
 *   is absent: callers skip calico and say so
 * @throws Error when the build or the CRD install fails
 */
export function setupCalico(
  tmp: string,
  apiSource: string,
  cidr = '10.241.0.0/16',
): (PeerIpam & { readonly version: string }) | undefined {
  const built = buildCalico(apiSource);
  if (!built) return undefined;
  must(['apply', '--server-side', '-f', built.crds]);
  must(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ipamblocks.crd.projectcalico.org']);
  must(['apply', '-f', '-'], JSON.stringify(calicoPool('bench-calico', cidr)));
  const kubeconfig = controlPlane().adminKubeconfig;
  return {
    bin: join(built.dir, 'calico-ipam'),
    version: CALICO_VERSION,
    ipam: () => ({ type: 'calico-ipam' }),
    top: (node) => ({
      datastore_type: 'kubernetes',
      nodename: node,
      kubernetes: { kubeconfig },
      ipam_lock_file: join(tmp, `calico-${node}.lock`),
      log_level: 'info',
      log_file_path: join(tmp, `calico-${node}.log`),
    }),
  };
}

/** A Calico IPPool of /26 blocks for every node, no encapsulation (crd.projectcalico.org/v1). */
export const calicoPool = (name: string, cidr: string): Record<string, unknown> => ({
  apiVersion: 'crd.projectcalico.org/v1',
  kind: 'IPPool',
  metadata: { name },
  spec: { cidr, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' },
});

/** Deletes what calico-ipam wrote (the CRDs stay installed, as blockipam's do). */
export function cleanupCalico(): void {
  for (const kind of ['ipamblocks', 'blockaffinities', 'ipamhandles', 'ippools', 'ipamconfigs'])
    kubectl(['delete', `${kind}.crd.projectcalico.org`, '--all']);
}

/** A Kubernetes Node object (calico-ipam reads the Node; the blockipam agent watches it). */
export function applyNodes(names: readonly string[]): void {
  must(
    ['apply', '--validate=false', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: names.map((name) => ({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: { 'kubernetes.io/hostname': name } },
      })),
    }),
  );
}

/**
 * Helm for the chart tests: the Helm 3 and Helm 4 executables built by test/tools/build-helm.sh
 * (cached in ~/.cache/blockipam; the script returns at once when they are there), a synchronous
 * runner, and `render()` — `helm template` parsed into objects.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { requireIntegrationTier } from '../helpers/tier.ts';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The chart, absolute (Helm resolves a relative path as a repository chart after a cd). */
export const CHART = join(REPO, 'charts', 'blockipam');

export type HelmMajor = 3 | 4;
let built: Record<HelmMajor, string> | undefined;

/**
 * Paths of the Helm executables, building them first if the cache lacks them (4.5-21 min cold, depending on load).
 * @throws Error with the build's stderr when it fails
 */
export function helmBinaries(): Record<HelmMajor, string> {
  requireIntegrationTier('the Helm executables (built outside the repo)');
  if (built) return built;
  const r = spawnSync('bash', [join(REPO, 'test', 'tools', 'build-helm.sh')], { encoding: 'utf8' });
  const path = (key: string): string => {
    const line = r.stdout.split('\n').find((l) => l.startsWith(`${key}=`));
    if (r.status !== 0 || !line)
      throw new Error(`build-helm.sh failed (${r.status}): ${r.stderr.slice(-2000)}`);
    return line.slice(key.length + 1);
  };
  return (built = { 3: path('HELM3'), 4: path('HELM4') });
}

export interface RunResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `helm ARGS` of the given major version; HELM_CACHE_HOME etc. stay in a temp dir. */
export function helm(major: HelmMajor, args: readonly string[], env: NodeJS.ProcessEnv = {}): RunResult {
  const r = spawnSync(helmBinaries()[major], args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      HELM_CACHE_HOME: '/tmp/blockipam-helm/cache',
      HELM_CONFIG_HOME: '/tmp/blockipam-helm/config',
      HELM_DATA_HOME: '/tmp/blockipam-helm/data',
      ...env,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A rendered Kubernetes object (only the fields the tests read are typed). */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}

/**
 * `helm template` with the API versions of a 1.37 API server (the policy needs
 * admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy), parsed.
 * @param args extra arguments (--set, -f, --include-crds, --namespace, the release name first)
 * @throws Error with Helm's stderr when it fails
 */
export function render(major: HelmMajor, args: readonly string[] = []): Rendered[] {
  const r = helm(major, templateArgs(args));
  if (r.status !== 0) throw new Error(`helm ${major} template failed: ${r.stderr}`);
  return parseObjects(r.stdout);
}

/** The argument list of `render`: template RELEASE CHART --namespace kube-system --api-versions … */
export function templateArgs(args: readonly string[]): string[] {
  const [release = 'blockipam', ...rest] = args;
  return [
    'template',
    release,
    CHART,
    '--namespace',
    'kube-system',
    '--kube-version',
    'v1.37.2',
    '--api-versions',
    'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy',
    ...rest,
  ];
}

/** The objects of a multi-document YAML stream (empty documents dropped). */
export function parseObjects(text: string): Rendered[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null && typeof o === 'object');
}

/** The one object of `kind` named `name`. @throws Error naming it when absent */
export function find(objects: readonly Rendered[], kind: string, name: string): Rendered {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`rendered chart has no ${kind} ${name}`);
  return found;
}

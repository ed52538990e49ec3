/**
 * How the pod-churn benchmark installs blockipam for its run, and removes it afterwards, so that
 * host-local's run has neither its agents nor its controller beside it.
 *
 * - `chart` (the default): what an operator runs — `helm install` (Helm 4) of charts/blockipam
 *   with the image built by scripts/build-image.sh and imported into every node; the agent
 *   DaemonSet installs the plugin, writes the conflist and the node cache, and programs routes;
 *   the controller Deployment (2 replicas, leader election) runs beside it. Removed by
 *   `helm uninstall`, then the IPAM objects and what the agents left on the nodes.
 * - `script`: test/cluster/install-blockipam.sh's plugin and conflist (written by network.ts)
 *   with one node agent per node as a host process (no routes, no controller) — the set-up of
 *   the runs before the chart existed, kept to compare with them.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CHART } from '../../charts/helm.ts';
import {
  blockipamImage,
  cleanNodes,
  harnessValues,
  helm,
  NAMESPACE,
  PREFIX,
  prepareNodes,
  RELEASE,
} from '../../cluster/chart.ts';
import { importImage, kubectl, type Cluster } from '../../helpers/cluster.ts';
import { POD_MTU, startAgents } from './network.ts';

export type InstallMode = 'chart' | 'script';

/** blockipam installed for one run. */
export interface Installed {
  /** One sentence for the report: what ran beside the plugin. */
  readonly describe: string;
  /** Removes it (idempotent). */
  stop(): Promise<void>;
}

function ok(what: string, r: { status: number; stdout: string; stderr: string }): string {
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

async function waitFor(what: string, test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function installChart(c: Cluster, log: (text: string) => void): Promise<Installed> {
  log('chart: building (or reusing) the image and importing it into every node');
  const image = blockipamImage();
  importImage(image.archive);
  prepareNodes();
  const tag = image.ref.split(':')[1] ?? '';
  log(`chart: helm install ${RELEASE} (image ${image.ref})`);
  ok(
    'helm install',
    helm(4, [
      'install',
      RELEASE,
      CHART,
      '--namespace',
      NAMESPACE,
      ...harnessValues(),
      '--set',
      `image.tag=${tag},cni.mtu=${POD_MTU}`,
    ]),
  );
  const stop = async (): Promise<void> => {
    helm(4, ['uninstall', RELEASE, '--namespace', NAMESPACE]);
    // the agents must be gone before their files are: a running one writes them again
    await waitFor(
      'the agent and controller pods to be gone',
      () =>
        kubectl([
          '-n',
          NAMESPACE,
          'get',
          'pods',
          '-l',
          `app.kubernetes.io/instance=${RELEASE}`,
          '-o',
          'name',
        ]).stdout.trim() === '',
      180_000,
    ).catch((error: unknown) => log(String(error)));
    kubectl(['delete', 'ipamblocks,ippools,ipamconfigs', '--all']);
    cleanNodes();
  };
  try {
    for (const [kind, name] of [
      ['daemonset', `${PREFIX}-agent`],
      ['deployment', `${PREFIX}-controller`],
    ] as const)
      ok(
        `rollout of ${kind}/${name}`,
        kubectl(['-n', NAMESPACE, 'rollout', 'status', `${kind}/${name}`, '--timeout=300s']),
      );
    await waitFor(
      "every node's conflist written by its agent",
      () =>
        c.nodes.every((node) => existsSync(join(c.runDir, node, 'cni', 'net.d', '10-blockipam.conflist'))),
      120_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    describe: `installed by the chart (\`helm install\`, Helm 4): the agent DaemonSet (${c.nodes.length} pods: plugin, conflist, node cache, routes) and the controller Deployment (2 replicas)`,
    stop,
  };
}

/** Installs blockipam the given way; resolves when the plugin can be called on every node. */
export async function installBlockipamFor(
  mode: InstallMode,
  c: Cluster,
  repoRoot: string,
  log: (text: string) => void,
): Promise<Installed> {
  if (mode === 'chart') return installChart(c, log);
  const agents = await startAgents(c, repoRoot);
  return {
    describe: `installed by test/cluster/install-blockipam.sh, a node agent per node as a host process (pids ${agents.pids.join(', ')}; no routes, no controller)`,
    stop: () => agents.stop(),
  };
}

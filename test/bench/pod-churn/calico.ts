/**
 * Calico's own CNI plugin with calico-ipam (Kubernetes datastore, the v3.28 line) on the test
 * cluster's real nodes, for the pod-churn benchmark — without calico-node (no Felix, no BIRD,
 * no Typha): pods get their veth, address and host route from the CNI plugin alone, which is all
 * "time until Running" needs. What it needed here, beyond the build (peer-ipams.ts buildCalico):
 *
 * - Calico's CRDs (crd.projectcalico.org/v1, from the calico module zip) and one IPPool
 *   (10.246.0.0/16, /26 blocks, no encapsulation, `all()` nodes);
 * - a ClusterInformation `default` with `datastoreReady: true` — calico-node's start-up sets it,
 *   and the CNI plugin refuses every ADD and DEL with "Calico is currently not ready to process
 *   requests" while it is unset (cni-plugin/pkg/plugin/plugin.go);
 * - `nodename` and `nodename_file_optional: true` in the netconf: without calico-node there is
 *   no /var/lib/calico/nodename, and the plugin otherwise fails every call with "stat
 *   /var/lib/calico/nodename: no such file or directory: check that the calico/node container
 *   is running" (found by the first run here); and a
 *   per-node `ipam_lock_file` (the default /var/run/calico/ipam.lock would be one lock for the 3
 *   nodes, which share this machine's file system);
 * - `policy: {type: k8s}` (as Calico's manifests write it): without it the plugin looks up a
 *   Calico Profile named after the network, which the Kubernetes datastore cannot hold, and
 *   every ADD fails "Invalid name k8s-pod-network" after its address was assigned and released;
 * - a kubeconfig reaching the API server from inside the node (the harness's inner admin
 *   kubeconfig: Calico's own install gives the plugin a token of the calico-cni-plugin
 *   ServiceAccount, whose ClusterRole grants pods get/patch among others — a benchmark anchor
 *   does not need least privilege);
 * - `calico` and `calico-ipam` (a symlink to it) in every node's CNI bin directory.
 */
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { kubectl, type Cluster } from '../../helpers/cluster.ts';
import { buildCalico, CALICO_VERSION, calicoPool } from '../peer-ipams.ts';

/** Calico's pool on the test cluster (apart from host-local's 10.245/16 and blockipam's 10.244/16). */
export const CALICO_CIDR = '10.246.0.0/16';

/** What the calico run needed, for the report's method text (the list above, in one sentence). */
export const CALICO_SETUP = `Calico's own CNI plugin (in place of ptp) + calico-ipam, the v3.28 line, + portmap, *without calico-node* (no Felix, BIRD or Typha: the pods get veth, address and host route from the CNI plugin, which is all "Running" needs); what that needed, set by the bench (test/bench/pod-churn/calico.ts): Calico's CRDs, an IPPool ${CALICO_CIDR} of /26 blocks, a ClusterInformation \`default\` with \`datastoreReady: true\` (without it every ADD fails "Calico is currently not ready to process requests"), \`nodename\` with \`nodename_file_optional: true\` (else every call fails on the absent /var/lib/calico/nodename), \`policy: {type: k8s}\` as Calico's manifests (else every ADD fails "Invalid name k8s-pod-network" looking up a Profile) and a per-node \`ipam_lock_file\` in the netconf, the harness's admin kubeconfig`;

/** Calico's log and lock files of `node` (per node, under the harness's run directory). */
export const calicoFiles = (c: Cluster, node: string): { log: string; lock: string } => ({
  log: join(c.runDir, node, 'log', 'calico-cni.log'),
  lock: join(c.runDir, node, 'calico-ipam.lock'),
});

function must(args: string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/**
 * Builds Calico (cached), installs its CRDs, pool and ClusterInformation in the cluster and
 * links its binaries into every node's CNI bin directory.
 * @returns a description for the report, or undefined (the reason on stderr) when it cannot be
 *   built here (the projectcalico/api source is absent)
 */
export function prepareCalico(c: Cluster, apiSource: string): string | undefined {
  const built = buildCalico(apiSource);
  if (!built) return undefined;
  must(['apply', '--server-side', '-f', built.crds]);
  must([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/clusterinformations.crd.projectcalico.org',
  ]);
  must(['apply', '-f', '-'], JSON.stringify(calicoPool('churn-calico', CALICO_CIDR)));
  must(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { datastoreReady: true, calicoVersion: CALICO_VERSION, clusterType: 'k8s' },
    }),
  );
  for (const node of c.nodes) {
    const bin = join(c.runDir, node, 'cni', 'bin');
    for (const name of ['calico', 'calico-ipam']) {
      rmSync(join(bin, name), { force: true });
      symlinkSync(join(built.dir, name), join(bin, name));
    }
  }
  return `Calico's CNI plugin + calico-ipam ${CALICO_VERSION} (the v3.28 line), without calico-node: Calico's CRDs, IPPool ${CALICO_CIDR} of /26 blocks, a ClusterInformation with datastoreReady true written by the bench, nodename, nodename_file_optional and a per-node ipam_lock_file in the netconf, the inner admin kubeconfig`;
}

/** The netconf plugin entry of Calico's CNI plugin on `node` (as Calico's manifests write it). */
export function calicoPlugin(c: Cluster, node: string, mtu: number): Record<string, unknown> {
  const files = calicoFiles(c, node);
  return {
    type: 'calico',
    datastore_type: 'kubernetes',
    nodename: node,
    nodename_file_optional: true,
    mtu,
    log_level: 'info',
    log_file_path: files.log,
    ipam_lock_file: files.lock,
    ipam: { type: 'calico-ipam' },
    policy: { type: 'k8s' },
    kubernetes: { kubeconfig: c.innerKubeconfig },
  };
}

interface CalicoBlock {
  spec: { allocations?: (number | null)[] };
}

/** Addresses calico-ipam holds in the cluster (non-null allocations of its IPAMBlocks). */
export function calicoHeld(): number {
  const out = must(['get', 'ipamblocks.crd.projectcalico.org', '-o', 'json']);
  const list = JSON.parse(out) as { items: CalicoBlock[] };
  return list.items.reduce((n, b) => n + (b.spec.allocations ?? []).filter((a) => a !== null).length, 0);
}

/** Blocks calico-ipam holds (the IPAMBlocks in the cluster). */
export function calicoBlocks(): number {
  return must(['get', 'ipamblocks.crd.projectcalico.org', '-o', 'name']).split('\n').filter(Boolean).length;
}

/** The errors in Calico's CNI logs, grouped by message shape (digits as N); "" when there is no log. */
export function calicoLogFigures(c: Cluster): string {
  const failures: Record<string, number> = {};
  let lines = 0;
  for (const node of c.nodes) {
    const file = calicoFiles(c, node).log;
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      lines += 1;
      // logrus' text lines: `2026-12-02 11:00:00.000 [ERROR][1234] plugin.go 123: message`
      const m = /\[ERROR\]\[\d+\] (?:\S+ \d+: )?(.*)$/.exec(line);
      if (m) {
        const shape = (m[1] ?? '')
          .replace(/[0-9a-f]{16,}/g, '…')
          .replace(/\d+/g, 'N')
          .slice(0, 120);
        failures[shape] = (failures[shape] ?? 0) + 1;
      }
    }
  }
  if (lines === 0) return '';
  return `Calico's CNI log (all phases, ${c.nodes.length} nodes): ${lines} lines, errors by message ${JSON.stringify(failures)}`;
}

/** Removes calico's objects (the CRDs stay) and its binaries from the nodes. */
export function cleanCalico(c: Cluster): void {
  for (const kind of [
    'ipamblocks',
    'blockaffinities',
    'ipamhandles',
    'ippools',
    'ipamconfigs',
    'clusterinformations',
  ])
    kubectl(['delete', `${kind}.crd.projectcalico.org`, '--all']);
  for (const node of c.nodes)
    for (const name of ['calico', 'calico-ipam'])
      rmSync(join(c.runDir, node, 'cni', 'bin', name), { force: true });
}

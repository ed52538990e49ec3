/**
 * An attacker with root on a node of the test cluster, for attack.int.test.ts: the credentials
 * the chart really hands out, read where they lie (the plugin's kubeconfig the agent wrote, the
 * agent's projected token in the kubelet's pod directory, another pod's token on its node), kept
 * in kubeconfig files inside that node's mount namespace (its private tmpfs /run: nothing on the
 * host), and kubectl run there with them; and the agents' routes on every node.
 */
import { cluster, inNode, kubectlOk, type RunResult } from '../helpers/cluster.ts';
import { NODE_CNI } from './chart.ts';

/** Where the attacker keeps its kubeconfig files, inside the node (tmpfs /run). */
export const LOOT = '/run/blockipam-attack';
/** The agents' routing protocol id (block-controller/agent/routes/types.ts ROUTE_PROTOCOL). */
export const ROUTE_PROTOCOL = 210;
/** Where the kubelet mounts a pod's projected volumes, under its pod directory. */
const TOKEN_VOLUME = 'volumes/kubernetes.io~projected';

function inNodeOk(node: string, cmd: string, args: readonly string[], input?: string): string {
  const r = inNode(node, cmd, args, input);
  if (r.status !== 0) throw new Error(`${node}: ${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** A credential on the attacker's node: a kubeconfig file there and what it is. */
export interface Credential {
  readonly what: string;
  readonly node: string;
  readonly kubeconfig: string;
}

/**
 * kubectl on `cred`'s node with its kubeconfig; `input` is sent on stdin: a string as is (JSON
 * text written by hand, e.g. holding a number JavaScript cannot express), anything else as JSON.
 */
export function as(cred: Credential, args: readonly string[], input?: unknown): RunResult {
  const stdin = input === undefined || typeof input === 'string' ? input : JSON.stringify(input);
  return inNode(cred.node, 'kubectl', ['--kubeconfig', cred.kubeconfig, ...args], stdin);
}

/** Who the API server says `cred` is: user name and its node-name extra (if any). */
export function whoami(cred: Credential): { username: string; node?: string } {
  const r = as(cred, ['auth', 'whoami', '-o', 'json']);
  if (r.status !== 0) throw new Error(`${cred.what}: kubectl auth whoami failed: ${r.stderr}`);
  const info = (
    JSON.parse(r.stdout) as {
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    }
  ).status.userInfo;
  const node = info.extra?.['authentication.kubernetes.io/node-name']?.[0];
  return { username: info.username, ...(node === undefined ? {} : { node }) };
}

/**
 * The plugin's kubeconfig on `node`, at the path the agent's conflist names (`ipam.kubeconfig` of
 * its first plugin), read on the node.
 */
export function pluginCredential(node: string, conflistName: string): Credential {
  const conflist = JSON.parse(inNodeOk(node, 'cat', [`${NODE_CNI}/net.d/${conflistName}`])) as {
    plugins: { ipam?: { kubeconfig?: string } }[];
  };
  const path = conflist.plugins[0]?.ipam?.kubeconfig;
  if (!path) throw new Error(`${node}: the conflist names no plugin kubeconfig`);
  inNodeOk(node, 'test', ['-s', path]);
  return { what: 'the plugin kubeconfig', node, kubeconfig: path };
}

/**
 * The token volume of pod `uid` on `podNode`, as the kubelet mounted it there
 * (`<root-dir>/pods/<uid>/volumes/kubernetes.io~projected/kube-api-access-*`).
 */
function tokenVolume(podNode: string, uid: string): string {
  const dir = `${cluster().runDir}/${podNode}/kubelet/pods/${uid}/${TOKEN_VOLUME}`;
  const found = inNodeOk(podNode, 'sh', ['-c', `ls -d ${dir}/kube-api-access-*`])
    .trim()
    .split('\n');
  if (found.length !== 1 || !found[0]) throw new Error(`${podNode}: no single token volume in ${dir}`);
  return found[0];
}

/**
 * Writes a kubeconfig for the inner API server into the attacker's node (the cluster CA: the run
 * directory's, which every node sees, as its kubelet does).
 */
function writeKubeconfig(node: string, name: string, user: Record<string, string>): string {
  const file = `${LOOT}/${name}.kubeconfig`;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'c', cluster: { server: cluster().innerApiUrl, 'certificate-authority': cluster().caFile } },
    ],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: 'c', user: name } }],
    'current-context': name,
  };
  inNodeOk(node, 'sh', ['-c', `mkdir -p ${LOOT} && umask 077 && cat > ${file}`], JSON.stringify(doc));
  return file;
}

/**
 * The projected token of pod `pod` (namespace `namespace`), read from the kubelet's pod
 * directory on the pod's node. When that node is the attacker's, the kubeconfig points at the
 * token file itself (`tokenFile`: what a root shell there uses); otherwise the token is copied
 * over (a token stolen elsewhere).
 */
export function podCredential(attacker: string, namespace: string, pod: string, what: string): Credential {
  const o = JSON.parse(kubectlOk(['-n', namespace, 'get', 'pod', pod, '-o', 'json'])) as {
    metadata: { uid: string };
    spec: { nodeName: string };
  };
  const volume = tokenVolume(o.spec.nodeName, o.metadata.uid);
  const user: Record<string, string> =
    o.spec.nodeName === attacker
      ? { tokenFile: `${volume}/token` }
      : { token: inNodeOk(o.spec.nodeName, 'cat', [`${volume}/token`]).trim() };
  return { what, node: attacker, kubeconfig: writeKubeconfig(attacker, pod, user) };
}

/** A credential holding `token` (e.g. one the admin minted for a user), on the attacker's node. */
export function tokenCredential(attacker: string, name: string, token: string, what: string): Credential {
  return { what, node: attacker, kubeconfig: writeKubeconfig(attacker, name, { token }) };
}

/** Removes the attacker's kubeconfig files. */
export function dropLoot(node: string): void {
  inNode(node, 'rm', ['-rf', LOOT]);
}

/** The agent's routes on `node` (`ip route show proto 210`, IPv4 and IPv6), one normalised line each. */
export function agentRoutes(node: string): string[] {
  const lines = ['-4', '-6'].flatMap((family) =>
    inNodeOk(node, 'ip', [family, 'route', 'show', 'proto', String(ROUTE_PROTOCOL)]).split('\n'),
  );
  return lines
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter(Boolean)
    .sort();
}

/** Every node's agent routes. */
export function allAgentRoutes(): Record<string, string[]> {
  return Object.fromEntries(cluster().nodes.map((n) => [n, agentRoutes(n)]));
}

/**
 * True when `routes` (one node's) hold what the route planner wants for the block `cidr` affine
 * to `owner`: a blackhole on the owner, a route via the owner's InternalIP elsewhere.
 */
export function hasBlockRoute(node: string, routes: readonly string[], cidr: string, owner: string): boolean {
  const c = cluster();
  const want = node === owner ? `blackhole ${cidr} ` : `${cidr} via ${c.nodeIps[c.nodes.indexOf(owner)]} `;
  return routes.some((r) => `${r} `.startsWith(want));
}

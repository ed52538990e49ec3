/**
 * One end-to-end "cluster" for plugin tests: node namespaces on a bridge (netns.ts), the test
 * API server reachable inside each node on its usual loopback address (api-forwarder.ts), the
 * blockipam executable on CNI_PATH next to a chosen ptp build, and a mini-libcni per node.
 * `destroy()` stops every forwarder and removes every namespace, also after a failed test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { controlPlane } from '../../helpers/control-plane.ts';
import { requirePrerequisite } from '../../helpers/tier.ts';
import { ensurePlugin, pluginDir } from '../../plugin/helpers/plugin-exe.ts';
import { serveUnix, startNodeForwarder, type NodeForwarder } from './api-forwarder.ts';
import { Libcni, type NetworkList } from './libcni.ts';
import { createTopology, type Topology } from './netns.ts';

/** A ptp build: Debian's 1.1.1 (CNI ≤ 1.0.0) or the current upstream one (1.1.0). */
export interface PtpFlavour {
  readonly label: string;
  /** Holds ptp and portmap (the conflist's two plugins). */
  readonly dir: string;
  readonly cniVersion: string;
  /** How to get it when it is missing (scripts/setup.sh gets both). */
  readonly howToGet: string;
}

export const debianPtp: PtpFlavour = {
  label: 'Debian ptp 1.1.1',
  dir: '/usr/lib/cni',
  cniVersion: '1.0.0',
  howToGet: 'scripts/setup.sh installs it (as root: apt-get install -y containernetworking-plugins)',
};
export function currentPtp(): PtpFlavour {
  return {
    label: 'ptp v1.10.0',
    dir: controlPlane().cniBin,
    cniVersion: '1.1.0',
    howToGet: 'scripts/setup.sh builds it (bash test/control-plane/build.sh cni)',
  };
}

/** @throws Error naming the missing binary and how to get it (tests never skip: tier.ts) */
export function requirePtp(ptp: PtpFlavour): void {
  for (const plugin of ['ptp', 'portmap'])
    requirePrerequisite(join(ptp.dir, plugin), `${ptp.label}'s ${plugin}`, ptp.howToGet);
}

export interface World {
  readonly topo: Topology;
  readonly tmp: string;
  readonly logFile: string;
  /** Kubernetes node name of node i (0-based). */
  nodeName(i: number): string;
  /** The mini-libcni running plugins in node i. */
  cni(i: number): Libcni;
  /** [ptp (+ blockipam), portmap] for node i; `ipam` fields merged into blockipam's. */
  conflist(i: number, ipam?: Record<string, unknown>): NetworkList;
  /** Makes the API server unreachable from node i (stops its forwarder). */
  stopApi(i: number): Promise<void>;
  startApi(i: number): Promise<void>;
  destroy(): Promise<void>;
}

/** @throws Error first of all when `ptp`'s binaries are missing ({@link requirePtp}) */
/**
 * @param bin the CNI bin directory holding `blockipam` (default build/plugin: the Bun executable;
 *   a conformance suite in agent mode passes the forwarder's, its `pluginDir`)
 */
export async function createWorld(
  nodeCount: number,
  ptp: PtpFlavour,
  tag: string,
  bin: string = pluginDir,
): Promise<World> {
  requirePtp(ptp);
  ensurePlugin();
  const cp = controlPlane();
  const api = new URL(cp.apiUrl);
  const tmp = mkdtempSync(join(tmpdir(), `bipam-${tag}-`));
  const sock = join(tmp, 'api.sock');
  const topo = createTopology(nodeCount, tag);
  const forwarders: (NodeForwarder | undefined)[] = [];
  let unix: Server | undefined;
  const world: World = {
    topo,
    tmp,
    logFile: join(tmp, 'blockipam.log'),
    nodeName: (i) => `${tag}-node-${i + 1}`,
    cni: (i) =>
      new Libcni({
        cniPath: [bin, ptp.dir],
        cacheDir: join(tmp, `cni-cache-${i}`),
        netns: topo.nodes[i],
      }),
    conflist: (i, ipam = {}) => ({
      cniVersion: ptp.cniVersion,
      name: `${tag}net`,
      plugins: [
        {
          type: 'ptp',
          capabilities: { portMappings: true },
          ipam: {
            type: 'blockipam',
            kubeconfig: cp.adminKubeconfig,
            nodeName: world.nodeName(i),
            logFile: world.logFile,
            cacheDir: join(tmp, `ipam-cache-${i}`),
            ...ipam,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    }),
    async stopApi(i) {
      await forwarders[i]?.stop();
      forwarders[i] = undefined;
    },
    async startApi(i) {
      forwarders[i] ??= await startNodeForwarder(topo.nodes[i] as string, Number(api.port), sock);
    },
    async destroy() {
      for (const f of forwarders) await f?.stop();
      unix?.close();
      topo.destroy();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
  try {
    unix = await serveUnix(sock, api.hostname, Number(api.port));
    for (let i = 0; i < nodeCount; i++) await world.startApi(i);
  } catch (e) {
    await world.destroy();
    throw e;
  }
  return world;
}

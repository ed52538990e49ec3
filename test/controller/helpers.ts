/**
 * Controller tests' cluster: the ipamctl tests' seeding helpers (nodes, pods with a status IP,
 * whole IPAMBlocks, cleanup — test/cli/cluster.ts), a ClusterView read by LISTs at one moment
 * (the reconciler's input without watches: each test decides exactly what the controller saw),
 * an injected clock, and a quiet logger.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { IPAM_CONFIG_NAME } from 'blockipam/core';
import type { Datastore, IPAMBlock, IPAMNode, Namespace, ResourceStore } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { ClusterView } from '../../block-controller/controller/view.ts';
import type { PassLog } from '../../block-controller/controller/pass.ts';

export {
  adminDatastore,
  blockObject,
  cleanCluster,
  cleanClusterHooks,
  createNamespace,
  createNode,
  createPod,
  deletePod,
  poolObject,
  setPodIP,
  uniqueNamespace,
} from '../cli/cluster.ts';

/** What the watches would show now, read once. */
export async function listedView(
  ds: Datastore & { ipamNodes?: ResourceStore<IPAMNode> },
): Promise<ClusterView> {
  const [pods, namespaces, nodes, blocks, pools, reservations, config, ipamNodes] = await Promise.all([
    ds.listPods(),
    'transport' in ds
      ? (ds as KubeDatastore).transport
          .request<{ items: Namespace[] }>('GET', '/api/v1/namespaces')
          .then((list) => list.items)
      : ([] as Namespace[]),
    ds.listNodes(),
    ds.blocks.list(),
    ds.pools.list(),
    ds.reservations.list(),
    ds.configs.get(IPAM_CONFIG_NAME),
    ds.ipamNodes?.list() ?? [],
  ]);
  return {
    notReady: () => undefined,
    pods: () => pods,
    namespaceAnnotations: (name) => namespaces.find((n) => n.metadata.name === name)?.metadata.annotations,
    nodeNames: () => nodes.map((n) => n.metadata.name),
    nodes: () => nodes,
    ipamNodes: () => ipamNodes,
    blocks: () => blocks,
    pools: () => pools,
    reservations: () => reservations,
    config: () => config,
  };
}

/** A clock the test moves. */
export class TestClock {
  nowMs: number;
  constructor(startMs = Date.now()) {
    this.nowMs = startMs;
  }
  readonly now = (): number => this.nowMs;
  advance(seconds: number): void {
    this.nowMs += seconds * 1000;
  }
}

/** Collects log lines (message + fields) instead of printing them. */
export function memoryLog(): PassLog & { lines: { message: string; fields?: Record<string, unknown> }[] } {
  const lines: { message: string; fields?: Record<string, unknown> }[] = [];
  const push = (message: string, fields?: Record<string, unknown>): void =>
    void lines.push({ message, fields });
  return { lines, info: push, warn: push, debug: push };
}

/** Each way a block is frozen (core/block/frozen.ts), by the reason core gives. */
export const FREEZES: [string, (b: IPAMBlock) => void][] = [
  ['terminating', (b) => void (b.metadata.deletionTimestamp = '2026-12-03T08:30:00Z')],
  ['finalizers', (b) => void (b.metadata.finalizers = ['example.com/hold'])],
  [
    'owner-references',
    (b) => void (b.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'x', uid: 'u' }]),
  ],
  ['unsafe-sequence', (b) => void (b.spec.sequence = 2 ** 52 + 8)],
];

/** A blockipam-controller process (block-controller/controller/main.ts) and its JSON log lines. */
export interface ControllerProcess {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  /** Its exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Its HTTP server's port, once it logged "controller started". */
  readonly port: Promise<number>;
}

/** Starts the controller with `args` (stderr inherited, stdout's JSON lines collected). */
export function startController(args: readonly string[]): ControllerProcess {
  const main = join(import.meta.dirname, '..', '..', 'block-controller', 'controller', 'main.ts');
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  let started!: (port: number) => void;
  const port = new Promise<number>((resolve) => (started = resolve));
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return; // not a log line
    }
    lines.push(line);
    if (line.message === 'controller started') started(Number(line.port));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, port };
}

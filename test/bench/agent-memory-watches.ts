/**
 * A light watch holder for test/bench/agent-memory-bench.ts (not a test, not a daemon): opens one
 * node agent's set of watches through the agents' own informer (block-controller/shared's
 * watchKind: paged LIST, then WATCH, every object held in its cache) and nothing else — no
 * upkeep, no IPAM server, no HTTP server — so its memory is what the watches hold plus a Node
 * process with those modules loaded.
 *
 * - `--watches new`: today's agent's watches, through its AgentState (this node's blocks by
 *   label, its Node by name, every IPAMNode, pools, configs, reservations, namespaces, its pods);
 * - `--watches old`: the previous agent's (5761aaf's AgentState): every IPAMBlock and every Node,
 *   pools, configs, reservations, namespaces, its pods.
 *
 * stdout, one JSON line each: `{"synced":true}` once every watch has listed; then, for each line
 * `heap` read on stdin, `{"heapUsed":<bytes>}` (process.memoryUsage().heapUsed, as prom-client's
 * nodejs_heap_size_used_bytes reads it). Logs (warn and up) go to stderr. Exits on SIGTERM.
 *
 *   node test/bench/agent-memory-watches.ts --watches old|new --node NAME --kubeconfig FILE
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { API_VERSION } from 'blockipam/core';
import { AgentState } from '../../block-controller/agent/state.ts';
import { connectKube, createLogger, createMetrics, watchKind } from '../../block-controller/shared/index.ts';
import type { WatchedKind } from '../../block-controller/shared/index.ts';

const { values } = parseArgs({
  options: {
    watches: { type: 'string' },
    node: { type: 'string' },
    kubeconfig: { type: 'string' },
  },
});
const { watches, node, kubeconfig } = values;
if ((watches !== 'old' && watches !== 'new') || !node || !kubeconfig)
  throw new RangeError('usage: --watches old|new --node NAME --kubeconfig FILE');

const log = createLogger({ component: 'agent', level: 'warn', stream: process.stderr });
const metrics = createMetrics('agent');
const connection = connectKube({ kubeconfig });
const print = (line: object): boolean => process.stdout.write(`${JSON.stringify(line)}\n`);

/** 5761aaf's AgentState.start: its seven watches, every IPAMBlock and every Node among them. */
async function oldWatches(): Promise<{ synced: () => boolean; stop: () => Promise<void> }> {
  const group = `/apis/${API_VERSION}`;
  const paths: [string, string, string?][] = [
    ['blocks', `${group}/ipamblocks`],
    ['pools', `${group}/ippools`],
    ['configs', `${group}/ipamconfigs`],
    ['reservations', `${group}/ipreservations`],
    ['nodes', '/api/v1/nodes'],
    ['namespaces', '/api/v1/namespaces'],
    ['pods', '/api/v1/pods', `spec.nodeName=${node}`],
  ];
  const all: WatchedKind<never>[] = await Promise.all(
    paths.map(([resource, path, fieldSelector]) =>
      watchKind<never>({
        resource,
        path,
        ...(fieldSelector ? { fieldSelector } : {}),
        kubeConfig: connection.kubeConfig,
        transport: connection.transport,
        log,
        metrics,
      }),
    ),
  );
  return {
    synced: () => all.every((w) => w.synced),
    stop: async () => void (await Promise.all(all.map((w) => w.stop()))),
  };
}

const held =
  watches === 'old'
    ? await oldWatches()
    : await AgentState.start({ node, connection, log, metrics }).then((state) => ({
        synced: () => state.synced,
        stop: () => state.stop(),
      }));
// watchKind resolves once the first LIST landed or failed; a failed one retries on its own
const poll = setInterval(() => {
  if (!held.synced()) return;
  clearInterval(poll);
  print({ synced: true });
}, 100);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'heap') print({ heapUsed: process.memoryUsage().heapUsed });
});
process.once('SIGTERM', () => {
  clearInterval(poll);
  void held.stop().finally(() => {
    connection.close();
    process.exit(0);
  });
});

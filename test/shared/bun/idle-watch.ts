/**
 * Test helper process (run with Bun, as the agent and controller executables run):
 *   bun idle-watch.ts KUBECONFIG INACTIVITY_MS IDLE_MS BLOCK_CIDR
 * Watches IPAMBlocks (block-controller/shared's watchKind) with a watch inactivity timeout of
 * INACTIVITY_MS, lets nothing happen for IDLE_MS, then creates the block BLOCK_CIDR and waits
 * (at most 10 s) for the watch to see it. Prints one JSON line: `lists` (LISTs of the kind
 * through the transport), `watches` (watch requests sent), `restarts` (the informer's
 * restart counter), `seen` (whether the block arrived through the watch).
 */
import { blockNameOf, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import {
  connectKube,
  createLogger,
  createMetrics,
  watchKind,
} from '../../../block-controller/shared/index.ts';

const [kubeconfig, inactivity, idle, cidrText] = process.argv.slice(2);
if (!kubeconfig || !inactivity || !idle || !cidrText)
  throw new Error('usage: idle-watch.ts KUBECONFIG INACTIVITY_MS IDLE_MS BLOCK_CIDR');
const BLOCKS = '/apis/ipam.blockipam.io/v1alpha1/ipamblocks';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let watches = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = Object.assign((input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  if (String(input instanceof Request ? input.url : input).includes('watch=true')) watches += 1;
  return realFetch(input, init);
}, realFetch);

const conn = connectKube({ kubeconfig });
let lists = 0;
const transport = conn.transport;
const request = transport.request.bind(transport);
transport.request = (method: string, path: string, options?: unknown) => {
  if (method === 'GET' && path === BLOCKS) lists += 1;
  return request(method as never, path, options as never);
};
const metrics = createMetrics('test');
const blocks = await watchKind<IPAMBlock>({
  resource: 'ipamblocks',
  path: BLOCKS,
  kubeConfig: conn.kubeConfig,
  transport,
  log: createLogger({ component: 'test', level: 'error' }),
  metrics,
  watchInactivityMs: Number(inactivity),
});
await sleep(Number(idle));
const cidr = mustParseCidr(cidrText);
await conn.datastore.blocks.create(newBlock({ cidr, pool: 'p', node: 'idle-watch', nowMs: 0 }));
let seen = false;
for (let i = 0; i < 200 && !seen; i++) {
  seen = blocks.get(blockNameOf(cidr)) !== undefined;
  if (!seen) await sleep(50);
}
const text = await metrics.registry.getSingleMetricAsString('blockipam_watch_restarts_total');
const restarts = Number(/resource="ipamblocks"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
process.stdout.write(`${JSON.stringify({ lists, watches, restarts, seen })}\n`);
await blocks.stop();
conn.close();
process.exit(0);

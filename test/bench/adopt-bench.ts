/**
 * Adopting a host-local cluster in place (docs/design-adopt.md): how long a node with
 * `--pods-per-node` pods (default 100) takes from its `blockipam.io/adopt=true` label to every pod's
 * address imported and its conflist written, and how many pings two pods pinging across nodes
 * every 200 ms lose meanwhile — the scenario of test/cluster/adopt.ts on a kind-shaped 3-node
 * cluster of its own, the second node's agent SIGKILLed right after its label. With
 * `--write-docs`, the `## Adopting a host-local cluster` section of docs/benchmarks.md is rewritten.
 *
 *   node test/bench/adopt-bench.ts [--pods-per-node 100] [--write-docs]
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { startOwnCluster } from '../helpers/cluster.ts';
import { adoptionScenario, type AdoptionFigures } from '../cluster/adopt.ts';
import { writeDocSection } from './doc-section.ts';

const { values } = parseArgs({
  options: {
    'pods-per-node': { type: 'string', default: '100' },
    'write-docs': { type: 'boolean', default: false },
  },
});
const PER_NODE = Number(values['pods-per-node']);
if (!Number.isInteger(PER_NODE) || PER_NODE < 1 || PER_NODE > 240)
  throw new RangeError(
    `--pods-per-node: "${values['pods-per-node']}" is not an integer 1-240 (a /24 podCIDR)`,
  );
const uptime = (): string => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
const log = (s: string): void => console.error(`[adopt] ${new Date().toISOString().slice(11, 19)} ${s}`);

const before = uptime();
log(`${PER_NODE} pods per node; ${before}`);
const own = startOwnCluster({ podNetwork: 'kind', nodes: 3 });
let figures: AdoptionFigures;
try {
  figures = await adoptionScenario(own.cluster, { podsPerNode: PER_NODE, checks: false });
} finally {
  if (!own.stop()) process.exitCode = 1;
}
const after = uptime();
const seconds = figures.adoptMs.map((ms) => (ms / 1000).toFixed(1));
const lost = figures.pings.map((p) => `${p.sent - p.received} of ${p.sent}`);
console.log(JSON.stringify({ perNode: PER_NODE, ...figures }));
log(`adopted in ${seconds.join(' / ')} s; pings lost ${lost.join(', ')}`);

if (values['write-docs'])
  await writeDocSection(
    '## Adopting a host-local cluster',
    `Time from a node's \`blockipam.io/adopt=true\` label until every one of its pods' addresses is
imported (held by the handle its DEL computes) and its conflist written, on a kind-shaped 3-node
test cluster (ptp + host-local on each node's /24 podCIDR) with ${PER_NODE} pods per node; the nodes
are adopted one after the other, node-2's agent SIGKILLed right after its label (its successor
imports). Two pods ping pods on other nodes every 200 ms from before the chart is installed to
after the last node (\`test/bench/adopt-bench.ts\`, the scenario of
\`test/cluster/adopt.ts\`; one run, ${new Date().toISOString().slice(0, 10)}).

| node                      | pods | adopted in |
| ------------------------- | ---- | ---------- |
${figures.adoptMs.map((ms, i) => `| node-${i + 1}${i === figures.killed ? ' (agent SIGKILLed)' : ''} | ${PER_NODE}${i === 0 || i === 2 ? ' + 1 pinger' : ''} | ${(ms / 1000).toFixed(1)} s |`).join('\n')}

Pings lost: ${figures.pings.map((p) => `${p.name} ${p.sent - p.received} of ${p.sent}`).join(', ')}.
Load: \`${before}\` before, \`${after}\` after.`,
  );

/**
 * Burst on one node (docs/benchmarks.md §Burst; not a test): N parallel ADDs of the plugin
 * for one node, then their N parallel DELs, through the node agent's IPAM socket beside the
 * same bursts on the plugin's direct path (`ipam.mode: standalone`), in one run. The plugin is
 * installed as the agent installs it from the image (conformance.ts installForwarded: the
 * native forwarder as `blockipam`, the Bun executable beside it as `blockipam-direct`).
 *
 * One kube-apiserver + etcd (private unless run under scripts/run-tests.ts' environment), the
 * CRDs, one pool of /26 blocks, two Node objects: `burst-agent`, served by ONE real agent process
 * (block-controller/agent/main.ts: IPAM socket in a temp dir, no routes, no
 * plugin install — nothing on the host changes), and `burst-standalone`, which has no agent.
 * Per mode a warm-up burst (not counted: the node's blocks get claimed), then `--rounds` rounds,
 * the modes taking turns (which goes first alternates). Each call has its own container ID and
 * no pod (CNI_ARGS empty: no pod or namespace reads). Per burst:
 * - wall time: first fork to last exit (burst-lib.ts' launcher forks all, then reaps);
 * - block UPDATEs and other API requests per call: kube-apiserver's apiserver_request_total
 *   over the burst (burst-lib.ts BLOCK_UPDATE, IPAM_REQUEST);
 * - plugin CPU per call: user + system of each process from wait4(2);
 * - the agent's CPU over the burst (/proc/<pid>/stat), per call;
 * - failures (non-zero exits, with the CNI code), and for the agent the calls its
 *   blockipam_agent_ipam_requests_total counted (a call the plugin took to its direct path
 *   instead would be missing there);
 * - after the DELs: allocations of the burst left on the API server (leaks).
 *
 *   node test/bench/burst-bench.ts [--calls 100] [--rounds 3] [--write-docs]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { applyNode, eventually, scrape, startAgent } from '../agent/agent-process.ts';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { fixture } from '../plugin/helpers/cluster.ts';
import { installForwarded } from '../plugin/helpers/conformance.ts';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';
import { BLOCK_UPDATE, cniCode, IPAM_REQUEST, launchBurst, sumOf } from './burst-lib.ts';
import { renderBurst, type Burst } from './burst-report.ts';
import { cpuSeconds } from './proc-stat.ts';
import { delta, requestCounters, timed } from './plugin-bench-lib.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    'write-docs': { type: 'boolean', default: false },
  },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
if (!(Number.isInteger(CALLS) && CALLS > 0 && Number.isInteger(ROUNDS) && ROUNDS > 0))
  throw new RangeError(`--calls and --rounds must be positive integers, not ${CALLS} and ${ROUNDS}`);
const NET = 'burstnet';
const log = (s: string): void => console.error(`[burst] ${new Date().toISOString().slice(11, 19)} ${s}`);

const load0 = loadavg()[0] ?? 0;
const cp = controlPlane();
const fx = fixture();
fx.pool('burst-v4', '10.248.0.0/16', 26);
const tmp = mkdtempSync(join(tmpdir(), 'bipam-burst-'));
const exe = join(await installForwarded(join(tmp, 'cni-bin')), 'blockipam');
const socket = join(tmp, 'agent', 'ipam.sock');

interface Mode {
  readonly name: 'agent' | 'standalone';
  readonly node: string;
  readonly netconf: string;
}
const netconf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({
    cniVersion: '1.1.0', // the agent's conflist's (--cni-version); STATUS needs 1.1.0
    name: NET,
    type: 'ptp',
    ipam: { type: 'blockipam', kubeconfig: cp.adminKubeconfig, ...ipam },
  });
const modes: readonly Mode[] = [
  {
    name: 'agent',
    node: 'burst-agent',
    netconf: netconf({ nodeName: 'burst-agent', agentSocket: socket, cacheDir: join(tmp, 'agent-cache') }),
  },
  {
    name: 'standalone',
    node: 'burst-standalone',
    netconf: netconf({ nodeName: 'burst-standalone', mode: 'standalone', cacheDir: join(tmp, 'sa-cache') }),
  },
];
const cniEnv = (command: string, id: string): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_NETNS: '/var/run/netns/burst',
  CNI_IFNAME: 'eth0',
  CNI_PATH: cp.cniBin,
  CNI_ARGS: '',
});
const counters = () => requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);

applyNode('burst-agent', {}, '10.99.0.21');
applyNode('burst-standalone', {}, '10.99.0.22');
const agent = startAgent('burst-agent', ['--ipam-socket', socket]);

/** Requests the agent's IPAM server counted for `op`, every outcome. */
async function served(op: string): Promise<number> {
  const re = new RegExp(`blockipam_agent_ipam_requests_total\\{[^}]*op="${op}"[^}]*\\} (\\d+)`, 'g');
  return [...(await scrape(agent)).text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
}

/** Allocations on the API server whose handle belongs to container IDs starting with `prefix`. */
function leftOver(prefix: string): number {
  return [...fx.allocations().keys()].filter((h) => h.startsWith(`${NET}.${prefix}`)).length;
}

async function burst(mode: Mode, command: 'ADD' | 'DEL', prefix: string, round: number): Promise<Burst> {
  const ids = Array.from({ length: CALLS }, (_, i) => `${prefix}${i}`);
  const scratch = join(tmp, `${prefix}${command}`);
  mkdirSync(scratch);
  const [before, served0, agentCpu0] = [await counters(), await served(command.toLowerCase()), agentCpu()];
  const out = await launchBurst(
    exe,
    ids.map((id) => cniEnv(command, id)),
    mode.netconf,
    scratch,
  );
  const agentCpu1 = agentCpu();
  const d = delta(before, await counters(), /./);
  const updates = sumOf(d, BLOCK_UPDATE);
  const addresses = out.runs
    .filter((r) => r.code === 0 && command === 'ADD')
    .map((r) => JSON.stringify((JSON.parse(r.stdout) as { ips: unknown[] }).ips));
  rmSync(scratch, { recursive: true, force: true });
  return {
    mode: mode.name,
    command,
    round,
    wallMs: out.wallMs,
    cpuMs: out.runs.map((r) => r.cpuMs),
    failures: out.runs.filter((r) => r.code !== 0).map(cniCode),
    updates,
    conflicts: sumOf(d, /^ipam\.blockipam\.io\/ipamblocks PUT 409$/),
    other: sumOf(d, IPAM_REQUEST) - updates,
    kinds: [...d].filter(([k]) => IPAM_REQUEST.test(k)).sort(([a], [b]) => a.localeCompare(b)),
    agentCpuMs: mode.name === 'agent' ? (agentCpu1 - agentCpu0) * 1000 : NaN,
    served: mode.name === 'agent' ? (await served(command.toLowerCase())) - served0 : NaN,
    distinct: command === 'ADD' ? new Set(addresses).size : NaN,
    leaked: command === 'DEL' ? leftOver(prefix) : NaN,
  };
}

const agentCpu = (): number => cpuSeconds(agent.child.pid ?? 0);

/** ADDs then DELs of one round of one mode. */
async function round(mode: Mode, r: number): Promise<Burst[]> {
  const prefix = `${mode.name === 'agent' ? 'ag' : 'sa'}-r${r}-`;
  const add = await burst(mode, 'ADD', prefix, r);
  const del = await burst(mode, 'DEL', prefix, r);
  log(
    `round ${r} ${mode.name}: ADD ${add.wallMs.toFixed(0)} ms (${add.failures.length} failed, ${add.updates} UPDATEs), DEL ${del.wallMs.toFixed(0)} ms (${del.failures.length} failed, ${del.updates} UPDATEs, ${del.leaked} left)`,
  );
  return [add, del];
}

async function main(): Promise<void> {
  log(`${CALLS} calls per burst, ${ROUNDS} rounds; load average ${load0.toFixed(2)}`);
  await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening', 300_000);
  // ready once a STATUS through the plugin was answered by the agent (before its first sync the
  // agent answers CNI 11; before its socket exists the plugin would take its direct path)
  const [agentMode] = modes as [Mode];
  await eventually(
    'STATUS answered by the agent',
    async () => {
      const r = await timed(
        exe,
        { ...cniEnv('STATUS', ''), CNI_CONTAINERID: '', CNI_NETNS: '', CNI_IFNAME: '' },
        agentMode.netconf,
      );
      return r.status === 0 && (await served('status')) > 0 ? true : undefined;
    },
    120_000,
  );
  for (const mode of modes) await round(mode, 0); // warm-up: blocks claimed, pages cached
  const bursts: Burst[] = [];
  for (let r = 1; r <= ROUNDS; r++)
    for (const mode of r % 2 ? modes : [...modes].reverse()) bursts.push(...(await round(mode, r)));
  const load1 = loadavg()[0] ?? 0;
  const text = await renderBurst(bursts, {
    calls: CALLS,
    rounds: ROUNDS,
    loadStart: load0,
    loadEnd: load1,
    serverVersion: cp.serverVersion,
    commit: spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: repoRoot,
      encoding: 'utf8',
    }).stdout.trim(),
    writeDocs: values['write-docs'],
  });
  console.log(text);
}

try {
  await main();
} finally {
  await agent.kill();
  fx.cleanup();
  kubectl(['delete', 'node', 'burst-agent', 'burst-standalone', '--ignore-not-found', '--wait=false']);
  rmSync(tmp, { recursive: true, force: true });
}

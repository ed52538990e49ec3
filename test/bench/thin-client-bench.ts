/**
 * The plugin's CPU per call (user + system of the process, from wait4's rusage) as a thin client
 * of the node agent — the Bun executable itself, and the native forwarder as the agent installs
 * it (conformance.ts installForwarded: `blockipam` the forwarder, `blockipam-direct` the Bun
 * executable) — beside the direct path and, with `--baseline EXE`, another build (e.g. one
 * of an earlier commit: `git worktree add`, `node scripts/build-plugin.ts`, copy
 * build/plugin/blockipam). VERSION; ADD then DEL through a stand-in agent on a Unix socket
 * (test/plugin/helpers/raw-agent.ts: answers at once, so the figure is the plugin's own); ADD
 * then DEL on the direct path against a real kube-apiserver (`ipam.mode: standalone`). The kinds
 * take turns, call by call, so machine load falls on all alike. Rewrites "## Thin client: CPU
 * per call" in docs/benchmarks.md.
 *
 * Usage: node test/bench/thin-client-bench.ts [--runs 50] [--baseline EXE [--baseline-name TEXT]]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { rawAgent } from '../plugin/helpers/raw-agent.ts';
import { fixture } from '../plugin/helpers/cluster.ts';
import { installForwarded } from '../plugin/helpers/conformance.ts';
import { ensurePlugin } from '../plugin/helpers/plugin-exe.ts';
import { median, percentile } from './cost-curves/common.ts';
import { writeDocSection } from './doc-section.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    baseline: { type: 'string' },
    'baseline-name': { type: 'string' },
  },
});
const RUNS = Number(values.runs);

/** One process run: its CPU (ms) and exit code, measured by the parent with wait4(2). */
interface Run {
  readonly label: string;
  readonly exe: string;
  readonly env: Record<string, string>;
  readonly stdin: string;
}

/** wait4 gives each child's own rusage; Node's child_process does not. */
const measurer = `
import json, os, sys
out = []
for r in json.load(open(sys.argv[1])):
    rd, wr = os.pipe(); o_rd, o_wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(rd, 0); os.dup2(o_wr, 1); os.dup2(os.open('/dev/null', os.O_WRONLY), 2)
        os.close(wr); os.close(o_rd)
        os.execve(r['exe'], [r['exe']], r['env'])
    os.close(rd); os.close(o_wr)
    os.write(wr, r['stdin'].encode()); os.close(wr)
    while os.read(o_rd, 65536): pass
    os.close(o_rd)
    _, status, ru = os.wait4(pid, 0)
    out.append({'label': r['label'], 'ms': (ru.ru_utime + ru.ru_stime) * 1000, 'code': os.waitstatus_to_exitcode(status)})
print(json.dumps(out))
`;

/** Runs `runs` in order, asynchronously: the stand-in agent answers from this process's event loop. */
async function measure(
  runs: readonly Run[],
  dir: string,
): Promise<{ label: string; ms: number; code: number }[]> {
  const file = join(dir, 'runs.json');
  writeFileSync(file, JSON.stringify(runs));
  const child = spawn('python3', ['-c', measurer, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`measurer failed with ${code}`);
  return JSON.parse(out) as { label: string; ms: number; code: number }[];
}

async function main(): Promise<void> {
  const exe = ensurePlugin();
  const fx = fixture();
  fx.pool('thin-v4', '10.250.0.0/16', 26);
  const agent = await rawAgent();
  const tmp = mkdtempSync(join(tmpdir(), 'bipam-thin-'));
  const load0 = loadavg()[0] ?? 0;
  const conf = (ipam: Record<string, unknown>): string =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'thinnet',
      type: 'ptp',
      ipam: {
        type: 'blockipam',
        kubeconfig: fx.kubeconfig,
        nodeName: 'thin-node',
        cacheDir: join(tmp, 'cache'),
        ...ipam,
      },
    });
  const env = (command: string, id: string): Record<string, string> => ({
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_NETNS: '/var/run/netns/none',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: '',
  });
  const forwarder = join(await installForwarded(join(tmp, 'cni-bin')), 'blockipam');
  /** `thin`: the build speaks to the agent (the baseline, before the thin client, does not). */
  const builds = [
    { name: 'this build', exe, thin: true, id: 'd' },
    { name: 'forwarder', exe: forwarder, thin: true, id: 'f' },
    ...(values.baseline ? [{ name: 'baseline', exe: values.baseline, thin: false, id: 'b' }] : []),
  ];
  const runs: Run[] = [];
  for (let i = 0; i < RUNS + 3; i++) {
    const warm = i < 3 ? 'warm-up ' : '';
    for (const b of builds) {
      runs.push({
        label: `${warm}${b.name}|VERSION`,
        exe: b.exe,
        env: { CNI_COMMAND: 'VERSION' },
        stdin: '{"cniVersion":"1.0.0"}',
      });
      if (b.thin) {
        const viaAgent = conf({ agentSocket: agent.socket });
        runs.push({
          label: `${warm}${b.name}|ADD via agent`,
          exe: b.exe,
          env: env('ADD', `a${b.id}${i}`),
          stdin: viaAgent,
        });
        runs.push({
          label: `${warm}${b.name}|DEL via agent`,
          exe: b.exe,
          env: env('DEL', `a${b.id}${i}`),
          stdin: viaAgent,
        });
      }
      const direct = conf(b.thin ? { mode: 'standalone' } : {});
      const id = `${b.id}${i}`;
      runs.push({
        label: `${warm}${b.name}|ADD direct (API server)`,
        exe: b.exe,
        env: env('ADD', id),
        stdin: direct,
      });
      runs.push({
        label: `${warm}${b.name}|DEL direct (API server)`,
        exe: b.exe,
        env: env('DEL', id),
        stdin: direct,
      });
    }
  }
  const results = (await measure(runs, tmp)).filter((r) => !r.label.startsWith('warm-up'));
  const load1 = loadavg()[0] ?? 0;
  const labels = [...new Set(results.map((r) => r.label))];
  const rows = labels.map((label) => {
    const mine = results.filter((r) => r.label === label);
    const ms = mine.map((r) => r.ms);
    const [build, call] = label.split('|');
    return `| ${build} | ${call} | ${median(ms).toFixed(1)} | ${percentile(ms, 10).toFixed(1)} | ${percentile(ms, 90).toFixed(1)} | ${mine.filter((r) => r.code !== 0).length} |`;
  });
  const body = [
    `Measured by \`node test/bench/thin-client-bench.ts\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: 2 cores, Node ${process.version}, kube-apiserver on loopback; load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end.`,
    `CPU per process (user + system, wait4 rusage), ${RUNS} calls of each kind after 3 warm-up rounds, the kinds taking turns call by call. "This build": the Bun executable; "forwarder": the native forwarder as the agent installs it from the image, the Bun executable beside it as \`blockipam-direct\` (VERSION and the direct path are its \`execve\` of that executable: both processes' CPU in one figure). "Via agent": a thin client of a stand-in agent that answers at once (the agent's own work is not in the figure); "direct": \`ipam.mode: standalone\`${values.baseline ? `; "baseline": ${values['baseline-name'] ?? values.baseline}` : ''}.`,
    '',
    '| build | call | CPU p50 ms | p10 | p90 | failed |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
  console.log(body);
  await writeDocSection('## Thin client: CPU per call', body);
  await agent.close();
  fx.cleanup();
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}

void main();

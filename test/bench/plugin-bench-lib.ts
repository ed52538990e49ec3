/**
 * Helpers of test/bench/plugin-bench.ts: timing of process runs, percentiles, API-server
 * request counters (apiserver_request_total from /metrics), and the docs section writer.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { writeDocSection } from './doc-section.ts';

export interface Timed {
  readonly ms: number;
  readonly status: number | null;
  readonly stdout: string;
}

/** Runs `bin` with env, stdin and `args`; resolves with the wall time in ms (spawn to exit). */
export function timed(
  bin: string,
  env: Record<string, string | undefined>,
  stdin: string,
  args: readonly string[] = [],
): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(bin, args, { env: env, stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('error', reject);
    child.on('close', (status) =>
      resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, status, stdout }),
    );
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}

/** Nearest-rank percentile of `values` (p in 0..100). */
export function pct(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

export const fmt = (ms: number): string => (Number.isNaN(ms) ? 'n/a' : ms.toFixed(1));

/** apiserver_request_total summed per `group/resource verb code` (group "" = core). */
export async function requestCounters(
  apiUrl: string,
  token: string,
  caFile: string,
): Promise<Map<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get(
      `${apiUrl}/metrics`,
      { headers: { Authorization: `Bearer ${token}` }, ca: readFileSync(caFile) },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
  });
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels: Record<string, string> = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    const key = `${labels.group ?? ''}/${labels.resource ?? ''} ${labels.verb ?? ''} ${labels.code ?? ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** after − before, keeping only keys whose group/resource matches `filter`. */
export function delta(
  before: Map<string, number>,
  after: Map<string, number>,
  filter: RegExp,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0 && filter.test(k)) out.set(k, d);
  }
  return out;
}

export function total(m: Map<string, number>): number {
  return [...m.values()].reduce((a, b) => a + b, 0);
}

/**
 * Replaces (or appends) the section under `heading` (default `## CNI plugin`) of the markdown file
 * at `path`, formatted as `prettier --check .` expects (test/bench/doc-section.ts).
 * @param section the section's text, starting with its heading line
 */
export async function writeDocsSection(
  path: string,
  section: string,
  heading = '## CNI plugin',
): Promise<void> {
  const body = section.startsWith(`${heading}\n`) ? section.slice(heading.length + 1) : section;
  await writeDocSection(heading, body, { path });
}

/** The value after `--name` on this benchmark's command line, if given. */
export const option = (name: string): string | undefined => {
  const argv = process.argv.slice(2);
  return argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined;
};

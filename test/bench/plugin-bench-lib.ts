/**
 * Helpers of test/bench/plugin-bench.ts: timing of process runs and API-server request counters
 * (apiserver_request_total from /metrics).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';

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

/** The value after `--name` on this benchmark's command line, if given. */
export const option = (name: string): string | undefined => {
  const argv = process.argv.slice(2);
  return argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined;
};

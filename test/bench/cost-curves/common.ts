/**
 * What the cost curves share: bounded concurrency for seeding, percentiles, request deltas and
 * the one-line run context (load average, versions) each curve records with its figures.
 */
import { loadavg } from 'node:os';

/** Seeding writes in flight: keeps both cores of the API server busy without 429s (check-bench). */
export const SEED_CONCURRENCY = 16;

/** Runs `work` over `items` with at most `concurrency` in flight, in order of start. */
export async function bounded<T>(
  items: readonly T[],
  work: (item: T, index: number) => Promise<void>,
  concurrency = SEED_CONCURRENCY,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) await work(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** Nearest-rank percentile of `values` (p in 0..100); NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

/** The median of `values` (the mean of the middle two for an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

/** `after − before` per key, keys that moved only. */
export function countDelta(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) if (n !== (before[k] ?? 0)) out[k] = n - (before[k] ?? 0);
  return out;
}

/** "1 GET + 2 PUT" from per-method counts (methods sorted), "none" when empty. */
export function requestText(counts: Readonly<Record<string, number>>, per = 1): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([method, n]) => `${Number((n / per).toFixed(2))} ${method}`);
  return parts.length ? parts.join(' + ') : 'none';
}

/** The 1-minute load average now, for "load average at the start / end" lines. */
export const load1 = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

/** Writes a timestamped progress line to stderr (stdout carries the results). */
export function progress(text: string): void {
  process.stderr.write(`${new Date().toISOString()} ${text}\n`);
}

/** One measured size of a curve: x, the figures, the load around it. */
export interface CurvePoint {
  readonly x: number;
  readonly figures: Readonly<Record<string, number | string>>;
  readonly loadStart: number;
  readonly loadEnd: number;
}

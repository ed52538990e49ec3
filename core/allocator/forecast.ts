/**
 * Exhaustion forecasts (pure; docs/design-controller.md §Forecasts): the controller keeps a few
 * samples of a pool's allocated count in `IPPool.status.allocationSamples` ({@link nextSamples});
 * anyone reading the status forecasts from them and the pool's current figures
 * ({@link forecastExhaustion}): the allocation rate over the samples' window, and when the free
 * addresses run out at that rate. One rule for the controller and ipamctl.
 */
import { rfc3339 } from '../time.ts';

/** One sample: the pool's allocated count at a time. */
export interface AllocationSample {
  /** RFC 3339, e.g. "2026-12-04T02:30:00Z". */
  readonly time: string;
  /** Allocated addresses then. */
  readonly allocated: number;
}

// 6 h: "recent" — long enough that a pod restart wave does not read as a trend, short enough that
// a rollout filling a pool shows within hours.
export const FORECAST_WINDOW_MS = 6 * 3_600_000;
// 30 min: at most 2 status writes per pool and hour for the samples (every agent watches IPPools).
export const SAMPLE_INTERVAL_MS = 30 * 60_000;
// 10 min: a rate over less history (a pool just made, a controller just started) is noise.
const MIN_FORECAST_SPAN_MS = 10 * 60_000;
// 16: the window holds 13 samples 30 min apart; a bound whatever a stored status holds.
export const MAX_SAMPLES = 16;
// 12 h (twice the window): a steadily sampled baseline is at most the window + one interval (and a
// pass) old, and a reader sees it up to one interval later still; one older than twice the window
// means sampling stopped (controller down, no leader), and a rate over it would average the gap
// rather than the recent hours. Such samples are dropped (nextSamples) and never a baseline
// (forecastExhaustion).
export const MAX_BASELINE_AGE_MS = 2 * FORECAST_WINDOW_MS;

/** A sample that may be used, with its time in ms since the epoch. */
interface ReadSample {
  readonly ms: number;
  readonly sample: AllocationSample;
}

/**
 * The stored samples that may be used at `nowMs`, oldest first: the status is user-writable, so
 * entries that are not objects, whose time is not an RFC 3339 string or lies in the future (a clock
 * stepped back), or whose count is not a non-negative safe integer are dropped, and the rest
 * sorted by time (of two with the same time, the later stored one kept).
 */
function readSamples(stored: unknown, nowMs: number): ReadSample[] {
  if (!Array.isArray(stored)) return [];
  const byTime = new Map<number, ReadSample>();
  for (const s of stored as unknown[]) {
    if (typeof s !== 'object' || s === null) continue;
    const { time, allocated } = s as Record<string, unknown>;
    if (typeof time !== 'string' || typeof allocated !== 'number') continue;
    const ms = Date.parse(time);
    if (!Number.isFinite(ms) || ms > nowMs || !Number.isSafeInteger(allocated) || allocated < 0) continue;
    byTime.set(ms, { ms, sample: { time, allocated } });
  }
  return [...byTime.values()].sort((a, b) => a.ms - b.ms);
}

/**
 * The samples to store after a pass at `nowMs`: the stored ones read as readSamples does (garbage
 * dropped, sorted), those older than {@link MAX_BASELINE_AGE_MS} dropped (a gap in sampling);
 * `allocated` appended when none is left or the newest is at least {@link SAMPLE_INTERVAL_MS} old
 * (else unchanged: no status write for the samples alone); then those older than
 * {@link FORECAST_WINDOW_MS} dropped but the newest of them (the baseline at the window's start),
 * at most {@link MAX_SAMPLES}, oldest first.
 * @param allocated saturating count (pool-status.ts count)
 */
export function nextSamples(
  stored: readonly AllocationSample[] | undefined,
  allocated: number,
  nowMs: number,
): AllocationSample[] {
  const valid = readSamples(stored, nowMs).filter((s) => nowMs - s.ms <= MAX_BASELINE_AGE_MS);
  const newest = valid.at(-1);
  const due = newest === undefined || nowMs - newest.ms >= SAMPLE_INTERVAL_MS;
  const all = due ? [...valid, { ms: nowMs, sample: { time: rfc3339(nowMs), allocated } }] : valid;
  const start = nowMs - FORECAST_WINDOW_MS;
  const baseline = all.filter((s) => s.ms <= start).at(-1);
  const inside = all.filter((s) => s.ms > start);
  return [...(baseline ? [baseline] : []), ...inside].slice(-MAX_SAMPLES).map((s) => s.sample);
}

/** A pool's forecast. */
export type Forecast =
  /** No free address now. */
  | { readonly kind: 'exhausted' }
  /**
   * No rate: `short`, less than {@link MIN_FORECAST_SPAN_MS} of samples (`spanMs` of them);
   * `stale`, samples only older than {@link MAX_BASELINE_AGE_MS} (the controller has not sampled:
   * down, or no leader), the newest `spanMs` old.
   */
  | { readonly kind: 'unknown'; readonly reason: 'short' | 'stale'; readonly spanMs: number }
  /** Allocation flat or falling over the window. */
  | { readonly kind: 'never'; readonly ratePerHour: number }
  /** At `ratePerHour` (> 0), the free addresses run out in `inMs`. */
  | { readonly kind: 'exhausts'; readonly ratePerHour: number; readonly inMs: number };

/**
 * Forecast from the samples and the pool's figures now: the baseline is the oldest usable sample
 * (as readSamples reads them: garbage and future ones dropped, sorted) no older than
 * {@link MAX_BASELINE_AGE_MS}; rate = (allocated now − baseline's) / time since the baseline, per
 * hour; free / rate until exhaustion.
 * @param now.allocated and now.free from the pool's status (or poolUtilization)
 */
export function forecastExhaustion(
  samples: readonly AllocationSample[] | undefined,
  now: { allocated: number; free: number; nowMs: number },
): Forecast {
  if (now.free <= 0) return { kind: 'exhausted' };
  const usable = readSamples(samples, now.nowMs);
  const baseline = usable.find((s) => now.nowMs - s.ms <= MAX_BASELINE_AGE_MS);
  const newest = usable.at(-1);
  if (!baseline && newest) return { kind: 'unknown', reason: 'stale', spanMs: now.nowMs - newest.ms };
  const spanMs = baseline ? now.nowMs - baseline.ms : 0;
  if (!baseline || spanMs < MIN_FORECAST_SPAN_MS) return { kind: 'unknown', reason: 'short', spanMs };
  const ratePerHour = ((now.allocated - baseline.sample.allocated) * 3_600_000) / spanMs;
  if (ratePerHour <= 0) return { kind: 'never', ratePerHour };
  return { kind: 'exhausts', ratePerHour, inMs: (now.free / ratePerHour) * 3_600_000 };
}

/**
 * A forecast as a person reads it: "in 3.2 days (12.5/h)", "never at the current rate",
 * "exhausted", "unknown (history < 10 min)", "unknown (no sample for 26.0 hours: is the controller
 * running?)".
 */
export function forecastText(f: Forecast): string {
  switch (f.kind) {
    case 'exhausted':
      return 'exhausted';
    case 'unknown':
      return f.reason === 'short'
        ? `unknown (history < ${MIN_FORECAST_SPAN_MS / 60_000} min)`
        : `unknown (no sample for ${(f.spanMs / 3_600_000).toFixed(1)} hours: is the controller running?)`;
    case 'never':
      return 'never at the current rate';
    case 'exhausts': {
      const days = f.inMs / 86_400_000;
      const when = days >= 1 ? `${days.toFixed(1)} days` : `${(f.inMs / 3_600_000).toFixed(1)} hours`;
      return `in ${when} (${f.ratePerHour.toFixed(1)}/h)`;
    }
  }
}
